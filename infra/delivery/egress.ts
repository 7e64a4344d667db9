/**
 * Static egress (`egress: { staticIps: true }`): the consumer, the one function that calls receivers
 * (the recovery function, the API and the seeds send to AWS alone; the API's test event goes through
 * the queue to the consumer), runs in a VPC of two zones whose NAT gateways leave the internet from
 * Elastic IPs this stack allocates. Every webhook then comes from one of two addresses, known to the
 * template and published as the stack output `EgressIps`, so a receiver can allowlist them.
 *
 * - Two public subnets, one NAT gateway each, each with its own Elastic IP: a zone's outage leaves the
 *   other's address working, and no request crosses zones (each private subnet routes to the NAT
 *   gateway in its own zone).
 * - Two private subnets (with egress) hold the consumer's network interfaces. Its security group lets
 *   nothing in, and out only TCP 443, 80 where the deployment allows http (`allowHttp`), and the
 *   ports given in `egress.extraPorts`: a receiver on another port is refused at synth when declared,
 *   and times out (`temporary`, then retried) when added later.
 * - What the consumer calls of AWS stays off the NAT gateways: a gateway endpoint for DynamoDB (the
 *   ledger and the registry, every delivery; free) and interface endpoints, private DNS on, in both
 *   zones, for SQS (routing's sends, dead letters, retries' visibility changes), Secrets Manager (the
 *   signing secrets and the seal key, read every 5 minutes a container) and KMS (the registry's
 *   encrypted secrets, decrypted once a container). The two calls it makes only when it disables an
 *   endpoint (EventBridge PutEvents, SNS Publish) go out through the NAT gateways: an endpoint each
 *   would cost more a month than years of those calls.
 * - A flow log of the VPC (every flow, accepted and rejected) into a log group of its own: which
 *   address and port each connection left by, and the connections the security group refused.
 *
 * The consumer's role gets the EC2 network-interface actions Lambda uses, when the function is made
 * or changed, to attach it to the subnets (what the AWS managed policy
 * AWSLambdaVPCAccessExecutionRole grants, without its logs actions: the role writes its own log group).
 */
import { Fn, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Settings } from '../../lib/config';
import { EndpointError, ConfigError } from '../../lib/errors';
import { parseProxyUrl } from '../../lib/webhook/connect-proxy';

/** The construct's `egress` prop. */
export interface EgressOptions {
  /**
   * The consumer in a VPC whose two NAT gateways have Elastic IPs of this stack: every webhook comes
   * from one of those two addresses (`egressIps`, the stack output `EgressIps`). Default false: the
   * consumer runs outside any VPC, from whatever address Lambda has.
   */
  readonly staticIps?: boolean;
  /**
   * TCP ports receivers listen on besides 443 (and 80 where `allowHttp` is set): the only ones the
   * consumer's security group lets it reach. Needs `staticIps`.
   */
  readonly extraPorts?: readonly number[];
}

/** How many zones, NAT gateways and Elastic IPs: two, so one zone's outage leaves an address working. */
export const EGRESS_ZONES = 2;

/** The port every deployment's consumer may reach: HTTPS, the receivers' and AWS's endpoints'. */
export const HTTPS_PORT = 443;
/** Reachable too where the deployment allows http receivers (`allowHttp`). */
export const HTTP_PORT = 80;

/** The AWS services the consumer calls through interface endpoints (and DynamoDB through a gateway endpoint). */
export const EGRESS_INTERFACE_ENDPOINTS = {
  Sqs: ec2.InterfaceVpcEndpointAwsService.SQS,
  SecretsManager: ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
  Kms: ec2.InterfaceVpcEndpointAwsService.KMS,
} as const;

/** What Lambda does with the consumer's role to attach it to the VPC (not what the code does). */
export const NETWORK_INTERFACE_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
] as const;

/** The static egress made for `egress: { staticIps: true }`. */
export interface StaticEgress {
  readonly vpc: ec2.Vpc;
  /** The consumer's: nothing in; out, TCP to `ports` alone. */
  readonly securityGroup: ec2.SecurityGroup;
  /** The interface endpoints' network interfaces: HTTPS from the consumer's security group alone. */
  readonly endpointSecurityGroup: ec2.SecurityGroup;
  /** One per NAT gateway, in zone order. */
  readonly elasticIps: readonly ec2.CfnEIP[];
  /** The Elastic IPs' addresses, comma-separated, in zone order: the stack output `EgressIps`. */
  readonly addresses: string;
  /** The ports the consumer may reach, ascending. */
  readonly ports: readonly number[];
  readonly flowLogs: logs.LogGroup;
  /** Where the consumer's network interfaces go. */
  readonly functionNetwork: Pick<lambda.FunctionProps, 'vpc' | 'vpcSubnets' | 'securityGroups'>;
}

/**
 * The ports the consumer may reach: 443, 80 with `allowHttp`, `extraPorts`, and the port of the
 * deployment's HTTP CONNECT proxy (`proxyUrl`), through which every request to a receiver then goes.
 * @throws ConfigError naming `egress.extraPorts`
 */
export function egressPorts(options: EgressOptions, settings: Pick<Settings, 'allowHttp' | 'proxyUrl'>): number[] {
  const extra = options.extraPorts ?? [];
  for (const port of extra) {
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new ConfigError('egress.extraPorts', `must hold TCP ports, whole numbers from 1 to 65535, got ${JSON.stringify(port)}`);
    }
  }
  const proxy = settings.proxyUrl === undefined ? [] : [parseProxyUrl(settings.proxyUrl).port];
  return [...new Set([HTTPS_PORT, ...(settings.allowHttp ? [HTTP_PORT] : []), ...extra, ...proxy])].sort((a, b) => a - b);
}

/**
 * The VPC, its NAT gateways with their Elastic IPs, the consumer's security group, the VPC endpoints
 * and the flow log, in a construct `Egress` of `scope`; undefined without `staticIps`.
 * @throws ConfigError naming `egress.extraPorts`
 */
export function createStaticEgress(
  scope: Construct,
  options: EgressOptions | undefined,
  settings: Pick<Settings, 'allowHttp' | 'proxyUrl'>,
  logRetention: logs.RetentionDays | undefined,
): StaticEgress | undefined {
  if (!options?.staticIps) {
    if (options?.extraPorts !== undefined) {
      throw new ConfigError('egress.extraPorts', 'needs egress.staticIps: without it the consumer is in no VPC and may reach any port');
    }
    return undefined;
  }
  const ports = egressPorts(options, settings);
  const egress = new Construct(scope, 'Egress');

  // Allocated here, not by the NAT gateways, so the template knows them: the output names them, and
  // they stay the stack's for as long as these two resources do (a deploy that changes the VPC keeps them).
  const elasticIps = Array.from({ length: EGRESS_ZONES }, (_, i) => {
    const id = `Address${i + 1}`;
    return new ec2.CfnEIP(egress, id, { domain: 'vpc', tags: [{ key: 'Name', value: `${egress.node.path}/${id}` }] });
  });
  const vpc = new ec2.Vpc(egress, 'Vpc', {
    maxAzs: EGRESS_ZONES,
    natGateways: EGRESS_ZONES,
    natGatewayProvider: ec2.NatProvider.gateway({ eipAllocationIds: elasticIps.map((ip) => ip.attrAllocationId) }),
    subnetConfiguration: [
      { name: 'Public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
      { name: 'Private', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 24 },
    ],
  });
  const privateSubnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS };

  const securityGroup = new ec2.SecurityGroup(egress, 'ConsumerSecurityGroup', {
    vpc,
    allowAllOutbound: false,
    description: `handoff consumer: nothing in; out, TCP ${ports.join(', ')} (receivers through the NAT gateways, AWS through the VPC endpoints)`,
  });
  for (const port of ports) {
    securityGroup.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(port), port === HTTPS_PORT ? 'HTTPS: receivers and the VPC endpoints' : `receivers on port ${port}`);
  }

  const endpointSecurityGroup = new ec2.SecurityGroup(egress, 'EndpointSecurityGroup', {
    vpc,
    allowAllOutbound: false,
    description: 'handoff: the network interfaces of the VPC endpoints, HTTPS from the consumer alone',
  });
  endpointSecurityGroup.addIngressRule(securityGroup, ec2.Port.tcp(HTTPS_PORT), 'the consumer');

  vpc.addGatewayEndpoint('DynamoDb', { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB, subnets: [privateSubnets] });
  for (const [id, service] of Object.entries(EGRESS_INTERFACE_ENDPOINTS)) {
    vpc.addInterfaceEndpoint(id, {
      service,
      subnets: privateSubnets,
      // The SDK's usual hostnames resolve to the endpoint's addresses in the VPC: no client change.
      privateDnsEnabled: true,
      open: false,
      securityGroups: [endpointSecurityGroup],
    });
  }

  const flowLogs = new logs.LogGroup(egress, 'FlowLogs', { retention: logRetention ?? logs.RetentionDays.ONE_MONTH });
  vpc.addFlowLog('FlowLog', { destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogs), trafficType: ec2.FlowLogTrafficType.ALL });

  return {
    vpc,
    securityGroup,
    endpointSecurityGroup,
    elasticIps,
    addresses: Fn.join(',', elasticIps.map((ip) => ip.attrPublicIp)),
    ports,
    flowLogs,
    functionNetwork: { vpc, vpcSubnets: privateSubnets, securityGroups: [securityGroup] },
  };
}

/**
 * Lets Lambda attach the consumer to the VPC with its role: NETWORK_INTERFACE_ACTIONS on `*`, as the
 * managed policy has them. cdk-nag's wildcard finding (AwsSolutions-IAM5) is acknowledged on this role.
 */
export function grantNetworkInterfaces(role: iam.Role): void {
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'VpcNetworkInterfaces', actions: [...NETWORK_INTERFACE_ACTIONS], resources: ['*'] }));
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      "The EC2 network-interface actions Lambda takes with the consumer's role to attach it to the static-egress VPC, as AWS's managed policy AWSLambdaVPCAccessExecutionRole grants them: ec2:DescribeNetworkInterfaces works only on Resource *, and the others on interfaces Lambda names itself. The function's code calls none of them; every other action names its table, queue, key or secret, but X-Ray's writes with tracing 'xray', which take no resource.",
  });
}

/**
 * Refuses, at synth, a declared endpoint whose URL's port the consumer's security group does not
 * allow: it would time out on every attempt. A URL known only at deploy (a parameter) is not checked.
 * @throws EndpointError naming the endpoint and `url`
 */
export function checkEgressPorts(endpoints: readonly { readonly name: string; readonly url: string }[], egress: Pick<StaticEgress, 'ports'>): void {
  for (const { name, url } of endpoints) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      continue; // Not a URL at synth: a token, or a URL the endpoint checks refuse with their own message.
    }
    const port = parsed.port === '' ? (parsed.protocol === 'http:' ? HTTP_PORT : HTTPS_PORT) : Number(parsed.port);
    if (!egress.ports.includes(port)) {
      throw new EndpointError(
        name,
        'url',
        `is on port ${port}, which the consumer cannot reach with egress.staticIps (its security group allows TCP ${egress.ports.join(', ')}): add ${port} to egress.extraPorts`,
      );
    }
  }
}
