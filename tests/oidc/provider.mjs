// An OpenID provider for the OAUTHBEARER tests: panva's oidc-provider, client credentials grant only,
// JWT access tokens (RFC 9068) signed with a fresh RS256 key. Listens on 127.0.0.1 only.
//
//   node provider.mjs <config.json>
//
// config.json: {"port": 0, "clients": [{"client_id", "client_secret", "audience", "scope"}], "ttl": 300}
// Prints one line `issuer=<url>` when it listens; stops on SIGTERM or when stdin closes.
import { readFileSync } from 'node:fs';
import { generateKeyPair, exportJWK } from 'jose';
import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const RESOURCE = 'urn:kafka:cluster';
const audienceOf = new Map(config.clients.map((c) => [c.client_id, c.audience]));

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: 'kafka-txn-test-rs256', use: 'sig', alg: 'RS256' };

const server = (await import('node:http')).createServer();
await new Promise((resolve) => server.listen(config.port || 0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: config.clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: c.scope,
  })),
  jwks: { keys: [jwk] },
  scopes: [...new Set(config.clients.flatMap((c) => c.scope.split(' ')))],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: client.scope,
        audience: audienceOf.get(client.clientId),
        accessTokenTTL: config.ttl || 300,
        accessTokenFormat: 'jwt',
      }),
    },
  },
});
provider.on('server_error', (ctx, err) => console.error(`server_error: ${err.message}`));
server.on('request', provider.callback());
console.log(`issuer=${issuer}`);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
