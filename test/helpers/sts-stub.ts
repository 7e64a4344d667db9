/**
 * STS's GetCallerIdentity on loopback, in its query protocol (XML): the identity an audit entry
 * records against AWS, where a test has none.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Answers every request with `arn` as the caller, of `account`; `url` is its endpoint. */
export async function startCallerIdentity(arn: string, account: string): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/xml' });
      response.end(
        '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
          `<Arn>${arn}</Arn><UserId>AIDAEXAMPLE</UserId><Account>${account}</Account>` +
          '</GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>',
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
