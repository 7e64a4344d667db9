/**
 * Static egress (`egress: { staticIps: true }`, infra/delivery/egress.ts): the consumer in a VPC whose
 * two NAT gateways leave from Elastic IPs of the stack, the VPC endpoints, the consumer's security
 * group, the `EgressIps` output, and nothing of it without the prop. One behaviour per test, asserted
 * on the synthesized template; bundling is skipped and the functions' entries are the stand-in.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, egressFromContext, HandoffStack } from '../../infra/app';
import {
  EGRESS_ZONES,
  NETWORK_INTERFACE_ACTIONS,
} from '../../infra/webhook-delivery';
import { ConfigError, EndpointError } from '../../lib/errors';
import { STACK_OUTPUTS } from '../../lib/stack-outputs';
import { buildDelivery, testApp, WARM_UP_MS, STAND_IN_ENTRY, WEBHOOK_URL, type Built } from './cdk-context';

const build = buildDelivery;

/** The default build with static egress, made once: most tests only read it. */
let staticBuild: Built | undefined;
const withStaticIps = () => (staticBuild ??= build({ egress: { staticIps: true } }));

type HasResource = { node: { defaultChild?: unknown } };
type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };
type Statement = { Sid?: string; Action: string | string[]; Resource: unknown };

const idOf = (built: Built, construct: HasResource) => built.stack.getLogicalId(construct.node.defaultChild as never);
const ref = (built: Built, construct: HasResource) => ({ Ref: idOf(built, construct) });

function resources(template: Template, type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

/** The subnets of the VPC by kind: their logical IDs, in zone order. */
function subnets(template: Template, kind: 'Public' | 'Private'): string[] {
  return Object.entries(resources(template, 'AWS::EC2::Subnet'))
    .filter(([, subnet]) => (subnet.Properties.Tags as { Key: string; Value: string }[]).some((t) => t.Key === 'aws-cdk:subnet-name' && t.Value === kind))
    .map(([id]) => id)
    .sort();
}

/** A function's resource by its construct. */
function functionOf(built: Built, fn: HasResource): Resource {
  return built.template.toJSON().Resources[idOf(built, fn)];
}

/** The statements of the policies attached to the role whose logical ID matches `role`. */
function statementsOf(template: Template, role: RegExp): Statement[] {
  return Object.values(resources(template, 'AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((r) => role.test(r.Ref)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('Static egress (egress.staticIps)', () => {
  beforeAll(() => void withStaticIps(), WARM_UP_MS);

  describe('without it', () => {
    it('makes no VPC, subnet, NAT gateway, Elastic IP, security group, VPC endpoint or flow log, and the consumer is in no VPC', () => {
      const built = build();
      const types = Object.values(built.template.toJSON().Resources as Record<string, Resource>).map((r) => r.Type);

      expect(types.filter((type) => type.startsWith('AWS::EC2::'))).toEqual([]);
      expect(functionOf(built, built.delivery.consumer).Properties.VpcConfig).toBeUndefined();
      expect(built.delivery.egress).toBeUndefined();
      expect(built.delivery.egressIps).toBeUndefined();
    });

    it('synthesizes the same template with `staticIps: false` as with no `egress` at all', () => {
      expect(build({ egress: { staticIps: false } }).template.toJSON()).toEqual(build().template.toJSON());
    });

    it('has no EgressIps output in the app', () => {
      const app = testApp();
      const handoff = new HandoffStack(app, 'Handoff', { delivery: { settings: { webhookUrl: WEBHOOK_URL }, entry: STAND_IN_ENTRY } });

      expect(Object.keys(Template.fromStack(handoff).toJSON().Outputs)).not.toContain(STACK_OUTPUTS.egressIps);
    });

    it('refuses extra ports, naming the prop', () => {
      const act = () => build({ egress: { extraPorts: [8443] } });

      expect(act).toThrow(ConfigError);
      expect(act).toThrow(/^egress\.extraPorts needs egress\.staticIps/);
    });
  });

  describe('the VPC', () => {
    it('spans two zones, each with a public and a private subnet', () => {
      const { template } = withStaticIps();

      template.resourceCountIs('AWS::EC2::VPC', 1);
      expect(subnets(template, 'Public')).toHaveLength(EGRESS_ZONES);
      expect(subnets(template, 'Private')).toHaveLength(EGRESS_ZONES);
      const zones = Object.values(resources(template, 'AWS::EC2::Subnet')).map((s) => JSON.stringify(s.Properties.AvailabilityZone));
      expect(new Set(zones).size).toBe(EGRESS_ZONES);
    });

    it('has two NAT gateways, one in each public subnet, each leaving from an Elastic IP of the stack', () => {
      const built = withStaticIps();
      const gateways = Object.values(resources(built.template, 'AWS::EC2::NatGateway'));
      const ips = built.delivery.egress!.elasticIps;

      expect(ips).toHaveLength(2);
      expect(gateways).toHaveLength(2);
      expect(gateways.map((g) => g.Properties.SubnetId.Ref).sort()).toEqual(subnets(built.template, 'Public'));
      expect(gateways.map((g) => g.Properties.AllocationId)).toEqual(ips.map((ip) => ({ 'Fn::GetAtt': [idOf(built, { node: { defaultChild: ip } }), 'AllocationId'] })));
      built.template.resourceCountIs('AWS::EC2::EIP', 2);
      built.template.allResourcesProperties('AWS::EC2::EIP', { Domain: 'vpc' });
    });

    it("routes each private subnet's internet traffic to the NAT gateway of its own zone", () => {
      const { template } = withStaticIps();
      const json = template.toJSON().Resources as Record<string, Resource>;
      const gatewayOfSubnet = new Map(Object.entries(resources(template, 'AWS::EC2::NatGateway')).map(([id, g]) => [g.Properties.SubnetId.Ref as string, id]));
      const tableOfSubnet = new Map(
        Object.values(resources(template, 'AWS::EC2::SubnetRouteTableAssociation')).map((a) => [a.Properties.SubnetId.Ref as string, a.Properties.RouteTableId.Ref as string]),
      );
      const zoneOf = (subnet: string) => JSON.stringify(json[subnet]!.Properties.AvailabilityZone);

      for (const privateSubnet of subnets(template, 'Private')) {
        const routes = Object.values(resources(template, 'AWS::EC2::Route')).filter((r) => r.Properties.RouteTableId.Ref === tableOfSubnet.get(privateSubnet));
        expect(routes).toHaveLength(1);
        expect(routes[0]!.Properties.DestinationCidrBlock).toBe('0.0.0.0/0');
        const gateway = routes[0]!.Properties.NatGatewayId.Ref as string;
        const publicSubnet = [...gatewayOfSubnet].find(([, id]) => id === gateway)![0];
        expect(zoneOf(publicSubnet)).toBe(zoneOf(privateSubnet));
      }
    });

    it('logs every flow (accepted and rejected) to a log group of its own, kept `logRetention`', () => {
      const built = withStaticIps();

      built.template.hasResourceProperties('AWS::EC2::FlowLog', {
        ResourceId: ref(built, built.delivery.egress!.vpc),
        ResourceType: 'VPC',
        TrafficType: 'ALL',
        LogDestinationType: 'cloud-watch-logs',
        LogGroupName: ref(built, built.delivery.egress!.flowLogs),
      });
      expect(resources(built.template, 'AWS::Logs::LogGroup')[idOf(built, built.delivery.egress!.flowLogs)]!.Properties.RetentionInDays).toBe(30);
    });
  });

  describe('the consumer', () => {
    it('runs in the two private subnets with its own security group', () => {
      const built = withStaticIps();

      expect(functionOf(built, built.delivery.consumer).Properties.VpcConfig).toEqual({
        SubnetIds: subnets(built.template, 'Private').map((id) => ({ Ref: id })),
        SecurityGroupIds: [{ 'Fn::GetAtt': [idOf(built, built.delivery.egress!.securityGroup), 'GroupId'] }],
      });
    });

    it('is the only function in the VPC: the recovery, the API, the portal authorizer and the seeds call no receiver', () => {
      const built = withStaticIps();
      const inVpc = Object.entries(resources(built.template, 'AWS::Lambda::Function')).filter(([, fn]) => fn.Properties.VpcConfig !== undefined);

      expect(inVpc.map(([id]) => id)).toEqual([idOf(built, built.delivery.consumer)]);
    });

    it('is created after the private subnets can reach the internet (their routes to the NAT gateways)', () => {
      const built = withStaticIps();
      const dependsOn = functionOf(built, built.delivery.consumer).DependsOn ?? [];
      const privateRoutes = Object.entries(resources(built.template, 'AWS::EC2::Route'))
        .filter(([, r]) => r.Properties.NatGatewayId !== undefined)
        .map(([id]) => id);

      expect(privateRoutes).toHaveLength(2);
      expect(dependsOn).toEqual(expect.arrayContaining(privateRoutes));
    });

    it('lets nothing in and reaches only TCP 443 out', () => {
      const built = withStaticIps();
      const group = resources(built.template, 'AWS::EC2::SecurityGroup')[idOf(built, built.delivery.egress!.securityGroup)]!;

      expect(group.Properties.SecurityGroupIngress).toBeUndefined();
      expect(group.Properties.SecurityGroupEgress).toEqual([
        { CidrIp: '0.0.0.0/0', IpProtocol: 'tcp', FromPort: 443, ToPort: 443, Description: 'HTTPS: receivers and the VPC endpoints' },
      ]);
      expect(
        Object.values(resources(built.template, 'AWS::EC2::SecurityGroupIngress')).filter((r) => JSON.stringify(r.Properties.GroupId).includes(idOf(built, built.delivery.egress!.securityGroup))),
      ).toEqual([]);
    });

    it('reaches port 80 too where the deployment allows http, and the extra ports given', () => {
      const built = build({ settings: { allowHttp: true }, egress: { staticIps: true, extraPorts: [8443, 443] } });
      const group = resources(built.template, 'AWS::EC2::SecurityGroup')[idOf(built, built.delivery.egress!.securityGroup)]!;

      expect((group.Properties.SecurityGroupEgress as { FromPort: number; ToPort: number; CidrIp: string }[]).map((r) => [r.FromPort, r.ToPort, r.CidrIp])).toEqual([
        [80, 80, '0.0.0.0/0'],
        [443, 443, '0.0.0.0/0'],
        [8443, 8443, '0.0.0.0/0'],
      ]);
    });

    it("reaches the deployment's HTTP CONNECT proxy on its port (proxyUrl), through which every receiver is then reached", () => {
      const built = build({ settings: { proxyUrl: 'http://proxy.internal:3128' }, egress: { staticIps: true } });
      const group = resources(built.template, 'AWS::EC2::SecurityGroup')[idOf(built, built.delivery.egress!.securityGroup)]!;

      expect((group.Properties.SecurityGroupEgress as { FromPort: number }[]).map((r) => r.FromPort)).toEqual([443, 3128]);
    });

    it('refuses a proxy URL with a user or password: it would land in the template', () => {
      for (const proxyUrl of ['http://user:pass@proxy.internal:3128', 'http:\\\\user:pass@proxy.internal:3128', 'http:/user@proxy.internal']) {
        expect(() => build({ settings: { proxyUrl }, egress: { staticIps: true } })).toThrow(/^proxyUrl must not hold a user or password in AWS/);
      }
    });

    it("may make and remove its network interfaces (what Lambda needs to attach it), and no other function's role may", () => {
      const { template } = withStaticIps();
      const eni = (role: RegExp) => statementsOf(template, role).filter((s) => actions(s).some((a) => a.startsWith('ec2:')));

      expect(eni(/ConsumerRole/)).toEqual([expect.objectContaining({ Sid: 'VpcNetworkInterfaces', Action: [...NETWORK_INTERFACE_ACTIONS].sort(), Resource: '*' })]);
      for (const role of [/RecoveryRole/, /ApiRole/, /PortalAuthorizerRole/]) expect(eni(role)).toEqual([]);
    });

    it("gives no other statement of the consumer a wildcard resource (the acknowledgement covers the network interfaces alone, beside tracing's X-Ray writes)", () => {
      const { template } = withStaticIps();
      const wildcards = statementsOf(template, /ConsumerRole/).filter((s) => JSON.stringify(s.Resource).includes('"*"'));

      // Lambda's active tracing (tracing 'xray', the default) adds its statement, without a Sid, acknowledged by infra/delivery/tracing.ts.
      expect(wildcards.map((s) => s.Sid ?? actions(s).join(' '))).toEqual(['xray:PutTelemetryRecords xray:PutTraceSegments', 'VpcNetworkInterfaces']);
    });
  });

  describe('the VPC endpoints', () => {
    it('keeps DynamoDB (the ledger and the registry) off the NAT gateways with a gateway endpoint on the private route tables', () => {
      const { template } = withStaticIps();
      const tables = new Map(
        Object.values(resources(template, 'AWS::EC2::SubnetRouteTableAssociation')).map((a) => [a.Properties.SubnetId.Ref as string, a.Properties.RouteTableId]),
      );

      template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
        VpcEndpointType: 'Gateway',
        ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, '.dynamodb']] },
        RouteTableIds: subnets(template, 'Private').map((subnet) => tables.get(subnet)),
      });
    });

    it('has interface endpoints for SQS, Secrets Manager and KMS, private DNS on, in both private subnets, behind their own security group', () => {
      const built = withStaticIps();
      const interfaces = Object.values(resources(built.template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties.VpcEndpointType === 'Interface');

      expect(interfaces.map((e) => e.Properties.ServiceName).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
        ['.kms', '.secretsmanager', '.sqs'].map((suffix) => ({ 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, suffix]] })),
      );
      for (const endpoint of interfaces) {
        expect(endpoint.Properties.PrivateDnsEnabled).toBe(true);
        expect(endpoint.Properties.SubnetIds).toEqual(subnets(built.template, 'Private').map((id) => ({ Ref: id })));
        expect(endpoint.Properties.SecurityGroupIds).toEqual([{ 'Fn::GetAtt': [idOf(built, built.delivery.egress!.endpointSecurityGroup), 'GroupId'] }]);
      }
    });

    it("let HTTPS in from the consumer's security group alone", () => {
      const built = withStaticIps();
      const endpointGroup = idOf(built, built.delivery.egress!.endpointSecurityGroup);
      const group = resources(built.template, 'AWS::EC2::SecurityGroup')[endpointGroup]!;
      const ingress = Object.values(resources(built.template, 'AWS::EC2::SecurityGroupIngress')).filter(
        (r) => JSON.stringify(r.Properties.GroupId) === JSON.stringify({ 'Fn::GetAtt': [endpointGroup, 'GroupId'] }),
      );

      expect(group.Properties.SecurityGroupIngress).toBeUndefined();
      expect(ingress.map((r) => r.Properties)).toEqual([
        {
          GroupId: { 'Fn::GetAtt': [endpointGroup, 'GroupId'] },
          IpProtocol: 'tcp',
          FromPort: 443,
          ToPort: 443,
          SourceSecurityGroupId: { 'Fn::GetAtt': [idOf(built, built.delivery.egress!.securityGroup), 'GroupId'] },
          Description: 'the consumer',
        },
      ]);
    });
  });

  describe('EgressIps', () => {
    it("is the two Elastic IPs' addresses, comma-separated, the same the NAT gateways leave from", () => {
      const built = withStaticIps();
      const ips = built.delivery.egress!.elasticIps.map((ip) => idOf(built, { node: { defaultChild: ip } }));

      expect(built.stack.resolve(built.delivery.egressIps)).toEqual({ 'Fn::Join': [',', ips.map((id) => ({ 'Fn::GetAtt': [id, 'PublicIp'] }))] });
      const allocations = Object.values(resources(built.template, 'AWS::EC2::NatGateway')).map((g) => g.Properties.AllocationId['Fn::GetAtt'][0]);
      expect(allocations.sort()).toEqual([...ips].sort());
    });

    it('is a stack output of the app, by that exact key', () => {
      const app = testApp();
      const handoff = new HandoffStack(app, 'Handoff', { delivery: { settings: { webhookUrl: WEBHOOK_URL }, entry: STAND_IN_ENTRY, egress: { staticIps: true } } });
      const template = Template.fromStack(handoff);

      expect(STACK_OUTPUTS.egressIps).toBe('EgressIps');
      template.hasOutput(STACK_OUTPUTS.egressIps, { Value: handoff.resolve(handoff.delivery.egressIps) });
    });
  });

  describe('declared receivers', () => {
    it('refuses, at synth, an endpoint on a port the security group shuts out, naming the endpoint and the field', () => {
      const act = () => build({ egress: { staticIps: true }, endpoints: [{ name: 'erp', url: 'https://erp.example.com:8443/hooks', eventTypes: ['*'] }] });

      expect(act).toThrow(EndpointError);
      expect(act).toThrow(/endpoint "erp": url is on port 8443, .* add 8443 to egress\.extraPorts/);
    });

    it('refuses the webhook URL (the endpoint default) on such a port too', () => {
      const act = () => build({ settings: { webhookUrl: 'https://receiver.example.com:9443/hooks' }, egress: { staticIps: true } });

      expect(act).toThrow(/endpoint "default": url is on port 9443/);
    });

    it('takes an endpoint on a port given in extraPorts, and one on 443 written out', () => {
      const act = () =>
        build({
          egress: { staticIps: true, extraPorts: [8443] },
          endpoints: [
            { name: 'erp', url: 'https://erp.example.com:8443/hooks', eventTypes: ['*'] },
            { name: 'carrier', url: 'https://carrier.example.com:443/hooks', eventTypes: ['*'] },
          ],
        });

      expect(act).not.toThrow();
    });

    it('refuses an extra port that is no TCP port, naming the prop', () => {
      expect(() => build({ egress: { staticIps: true, extraPorts: [70_000] } })).toThrow(/^egress\.extraPorts must hold TCP ports/);
      expect(() => build({ egress: { staticIps: true, extraPorts: [1.5] } })).toThrow(/^egress\.extraPorts must hold TCP ports/);
    });
  });

  describe('cdk-nag', () => {
    it('passes the AwsSolutions rules with no unacknowledged finding', () => {
      const { stack } = withStaticIps();

      const report = new AwsSolutionsChecks().validateScope(stack);

      expect(report.violations).toEqual([]);
      expect(report.success).toBe(true);
    });

    it("acknowledges one finding more than without it, the network interfaces' wildcard on the consumer's role, with its reason (beside tracing's)", () => {
      const built = withStaticIps();
      const acknowledged = built.stack.node
        .findAll()
        .filter((c) => c.node.metadata.some((m) => m.type === 'aws:cdk:acknowledged-rules'))
        .filter((c) => c.node.path.includes('ConsumerRole'))
        .flatMap((c) => c.node.metadata.filter((m) => m.type === 'aws:cdk:acknowledged-rules').flatMap((m) => Object.entries(m.data as Record<string, string>)));

      // The first is tracing's (X-Ray's writes, tracing 'xray' by default), there without static egress too.
      expect(acknowledged).toEqual([
        ['Annotation::AwsSolutions-IAM5[Resource::*]', expect.stringMatching(/active tracing.*xray:PutTraceSegments/)],
        ['Annotation::AwsSolutions-IAM5[Resource::*]', expect.stringMatching(/AWSLambdaVPCAccessExecutionRole.*DescribeNetworkInterfaces works only on Resource \*/)],
      ]);
    });

    it('passes them through the app too, where a finding fails the synth', () => {
      const app = buildApp(testApp({ webhookUrl: WEBHOOK_URL, egressStaticIps: 'true' }));

      const template = Template.fromStack(app.node.findChild('Handoff') as HandoffStack);

      expect(Object.keys(template.toJSON().Outputs)).toContain(STACK_OUTPUTS.egressIps);
    });
  });
});

describe('Context: egressStaticIps, egressExtraPorts', () => {
  const contextOf = (values: Record<string, unknown>) => (key: string) => values[key];

  it('is no VPC unless egressStaticIps=true', () => {
    expect(egressFromContext(contextOf({}))).toBeUndefined();
    expect(egressFromContext(contextOf({ egressStaticIps: 'false' }))).toBeUndefined();
    expect(egressFromContext(contextOf({ egressStaticIps: 'true' }))).toEqual({ staticIps: true });
    expect(egressFromContext(contextOf({ egressStaticIps: true }))).toEqual({ staticIps: true });
  });

  it('reads extra ports from the command line and from cdk.json alike', () => {
    expect(egressFromContext(contextOf({ egressStaticIps: 'true', egressExtraPorts: '8443, 9000' }))).toEqual({ staticIps: true, extraPorts: [8443, 9000] });
    expect(egressFromContext(contextOf({ egressStaticIps: true, egressExtraPorts: [8443] }))).toEqual({ staticIps: true, extraPorts: [8443] });
  });

  it('names the context key in an error', () => {
    expect(() => egressFromContext(contextOf({ egressStaticIps: 'yes' }))).toThrow(/^egressStaticIps \(CDK context\) must be true or false, got "yes"$/);
    expect(() => egressFromContext(contextOf({ egressExtraPorts: '8443' }))).toThrow(/^egressExtraPorts \(CDK context\) needs egressStaticIps=true$/);
    expect(() => egressFromContext(contextOf({ egressStaticIps: 'true', egressExtraPorts: '84a3' }))).toThrow(/^egressExtraPorts \(CDK context\) must be TCP ports/);
    expect(() => egressFromContext(contextOf({ egressStaticIps: 'true', egressExtraPorts: '0' }))).toThrow(ConfigError);
  });
});
