// Runs openid-client 6 (panva) against a running reference server and
// prints one line per operation, PASS, FAIL or SKIP. Exit status 1 when any
// operation failed.
//
//   node smoke.mjs [BASE_URL] [REALM]
//
// BASE_URL is the server's public base URL as a client addresses it
// (default http://127.0.0.1:8080): the binary itself, or a reverse proxy in
// front of it, with a path prefix if the proxy adds one
// (http://127.0.0.1:8081/auth). The server must have been started with
// fixture.json of this directory (users, clients and the redirect URI the
// script uses). See README.md.
import * as client from 'openid-client'
import * as jose from 'jose'

const base = (process.argv[2] || process.env.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '')
const realm = process.argv[3] || process.env.REALM || 'acme'
const issuer = `${base}/realms/${realm}`
const redirectUri = 'http://127.0.0.1:9/callback' // registered in fixture.json; never contacted
const insecure = { execute: [client.allowInsecureRequests] } // http on 127.0.0.1

let failures = 0
const results = []
async function step(name, fn) {
  try {
    const note = await fn()
    if (note && typeof note === 'object' && note.skip) {
      results.push(['SKIP', name, note.skip])
      console.log(`SKIP  ${name}: ${note.skip}`)
      return
    }
    results.push(['PASS', name, note || ''])
    console.log(`PASS  ${name}${note ? ': ' + note : ''}`)
  } catch (err) {
    failures++
    const detail = [err?.message, err?.code, err?.error, err?.error_description, err?.cause?.message ?? err?.cause?.error]
      .filter(Boolean).join(' | ')
    results.push(['FAIL', name, detail])
    console.log(`FAIL  ${name}: ${detail}`)
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg)
}

const decisionURL = new URL(`${issuer}/authorization-decision-provider/authorize`)
const decisionBody = JSON.stringify({ clientId: 'orders-api', resources: [{ name: 'orders', scopes: ['read'] }], context: {} })
const jsonHeaders = () => new Headers({ 'content-type': 'application/json' })

// decide asks for orders/read with token (DPoP-bound when dpop is given)
// and returns the decision's status.
async function decide(config, token, dpop) {
  const res = await client.fetchProtectedResource(config, token, decisionURL, 'POST', decisionBody, jsonHeaders(), dpop ? { DPoP: dpop } : undefined)
  const text = await res.text()
  assert(res.status === 200, `decision: HTTP ${res.status} ${res.headers.get('www-authenticate') || ''} ${text}`)
  return JSON.parse(text).status
}

// signIn drives the login form of an authorization URL as a browser would
// and returns the redirect back to the client.
async function signIn(authURL, username, password) {
  const page = await fetch(authURL, { redirect: 'manual' })
  const html = await page.text()
  assert(page.status === 200, `login form: HTTP ${page.status} ${html}`)
  const form = html.match(/<form id="login" method="post" action="([^"]+)">/)
  assert(form, 'no login form in the page')
  const action = decodeEntities(form[1])
  assert(action.startsWith(base + '/'), `the form posts to ${action}, not under ${base}`)
  const fields = new URLSearchParams()
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields.append(decodeEntities(m[1]), decodeEntities(m[2]))
  }
  fields.set('username', username)
  fields.set('password', password)
  const res = await fetch(action, { method: 'POST', body: fields, redirect: 'manual' })
  const location = res.headers.get('location')
  assert(res.status === 302 && location, `login post: HTTP ${res.status} ${await res.text()}`)
  return new URL(location)
}

function decodeEntities(s) {
  return s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n) => String.fromCharCode(parseInt(n, 16)))
    .replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
}

// codeFlow runs the authorization code flow with PKCE, state and nonce for
// config and returns the token response.
async function codeFlow(config, username, password, options) {
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const authURL = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, scope: 'openid profile email', state, nonce,
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  })
  assert(authURL.href.startsWith(issuer + '/'), `authorization endpoint ${authURL.origin}${authURL.pathname} is not under ${issuer}`)
  const back = await signIn(authURL, username, password)
  return client.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true }, undefined, options)
}

// verifyIDToken checks an ID token's signature against the realm's JWKS
// (openid-client checks its claims but, over TLS-less direct responses,
// not necessarily its signature).
async function verifyIDToken(meta, idToken, audience, nonce) {
  const jwks = jose.createRemoteJWKSet(new URL(meta.jwks_uri))
  const { payload, protectedHeader } = await jose.jwtVerify(idToken, jwks, { issuer, audience, algorithms: meta.id_token_signing_alg_values_supported })
  assert(protectedHeader.alg === 'RS256', `ID token alg ${protectedHeader.alg}`)
  if (nonce !== undefined) assert(payload.nonce === nonce, 'nonce differs')
  return payload
}

let confidential, meta
await step('discovery (OpenID Connect, .well-known/openid-configuration)', async () => {
  confidential = await client.discovery(new URL(issuer), 'orders-api', 'orders-secret', client.ClientSecretBasic(), insecure)
  meta = confidential.serverMetadata()
  assert(meta.issuer === issuer, `issuer ${meta.issuer}`)
  for (const k of ['authorization_endpoint', 'token_endpoint', 'jwks_uri']) {
    assert(meta[k].startsWith(issuer + '/'), `${k} ${meta[k]} is not under ${issuer}`)
  }
  return `issuer ${meta.issuer}`
})
if (!confidential) {
  console.log(`\n${failures} failed; discovery is needed for the rest`)
  process.exit(1)
}

await step('discovery (RFC 8414, .well-known/oauth-authorization-server)', async () => {
  const c = await client.discovery(new URL(issuer), 'orders-api', 'orders-secret', undefined, { ...insecure, algorithm: 'oauth2' })
  assert(c.serverMetadata().issuer === issuer, `issuer ${c.serverMetadata().issuer}`)
  assert(c.serverMetadata().token_endpoint === meta.token_endpoint, 'token endpoints differ')
})

await step('JWKS answers at jwks_uri', async () => {
  const res = await fetch(meta.jwks_uri)
  const set = await res.json()
  assert(res.status === 200 && set.keys?.length > 0, `HTTP ${res.status}`)
  return `${set.keys.length} keys`
})

await step('client_credentials, client_secret_basic', async () => {
  const tok = await client.clientCredentialsGrant(confidential)
  assert(tok.token_type.toLowerCase() === 'bearer', `token_type ${tok.token_type}`)
  assert((await decide(confidential, tok.access_token)) === 'GRANT', 'decision is not GRANT')
  return 'Bearer token, decision GRANT'
})

const post = new client.Configuration(meta, 'orders-api', 'orders-secret', client.ClientSecretPost())
client.allowInsecureRequests(post)
await step('client_credentials, client_secret_post', async () => {
  const tok = await client.clientCredentialsGrant(post)
  assert((await decide(post, tok.access_token)) === 'GRANT', 'decision is not GRANT')
})

await step('client_credentials, wrong secret is refused', async () => {
  const bad = new client.Configuration(meta, 'orders-api', 'wrong', client.ClientSecretBasic())
  client.allowInsecureRequests(bad)
  try {
    await client.clientCredentialsGrant(bad)
  } catch (err) {
    // RFC 6749 section 5.2: a client that authenticated with HTTP Basic
    // gets a 401 with a Basic challenge, which openid-client reports as a
    // WWWAuthenticateChallengeError before it reads the body.
    if (err.code === 'OAUTH_WWW_AUTHENTICATE_CHALLENGE') {
      assert(err.status === 401 && err.cause?.[0]?.scheme === 'basic', `challenge ${JSON.stringify(err.cause)}`)
      const body = await err.response.json()
      assert(body.error === 'invalid_client', `error ${body.error}`)
      return '401, Basic challenge, invalid_client'
    }
    assert(err.error === 'invalid_client', `error ${err.error}`)
    return 'invalid_client'
  }
  throw new Error('a wrong secret got a token')
})

for (const alg of ['ES256', 'Ed25519']) {
  await step(`DPoP client_credentials (${alg}) + DPoP decision via fetchProtectedResource`, async () => {
    assert(meta.dpop_signing_alg_values_supported?.includes(alg), `${alg} not in dpop_signing_alg_values_supported`)
    const dpop = client.getDPoPHandle(confidential, await client.randomDPoPKeyPair(alg))
    const tok = await client.clientCredentialsGrant(confidential, {}, { DPoP: dpop })
    assert(tok.token_type.toLowerCase() === 'dpop', `token_type ${tok.token_type}`)
    const jkt = JSON.parse(Buffer.from(tok.access_token.split('.')[1], 'base64url')).cnf?.jkt
    assert(jkt, 'no cnf.jkt in the token')
    assert((await decide(confidential, tok.access_token, dpop)) === 'GRANT', 'decision is not GRANT')
    // The same token as Bearer is refused.
    const res = await client.fetchProtectedResource(confidential, tok.access_token, decisionURL, 'POST', decisionBody, jsonHeaders())
      .catch((err) => err)
    const status = res instanceof Response ? res.status : res?.response?.status ?? res?.status
    assert(status === 401, `DPoP-bound token sent as Bearer: ${status ?? res}`)
    return 'token_type DPoP, decision GRANT, Bearer use refused'
  })
}

// Platform administration (master realm): turn DPoP nonces on and off.
let admin, adminTok
async function setNonces(on) {
  if (!admin) {
    admin = await client.discovery(new URL(`${base}/realms/master`), 'platform-admin', 'admin-secret', client.ClientSecretBasic(), insecure)
    adminTok = (await client.clientCredentialsGrant(admin)).access_token
  }
  const res = await client.fetchProtectedResource(admin, adminTok, new URL(`${base}/admin/config`), 'PATCH',
    JSON.stringify({ dpopNonceRequired: on }), jsonHeaders())
  assert(res.status === 200, `PATCH /admin/config: HTTP ${res.status} ${await res.text()}`)
}
await step('DPoP with server nonces (use_dpop_nonce retried by the client)', async () => {
  await setNonces(true)
  try {
    const dpop = client.getDPoPHandle(confidential, await client.randomDPoPKeyPair('ES256'))
    const tok = await client.clientCredentialsGrant(confidential, {}, { DPoP: dpop })
    assert((await decide(confidential, tok.access_token, dpop)) === 'GRANT', 'decision is not GRANT')
  } finally {
    await setNonces(false)
  }
})

await step('organization API with a DPoP-bound service-account token (GET and POST, Location)', async () => {
  const c = await client.discovery(new URL(issuer), 'org-admin', 'org-admin-secret', client.ClientSecretBasic(), insecure)
  const dpop = client.getDPoPHandle(c, await client.randomDPoPKeyPair('ES256'))
  const tok = await client.clientCredentialsGrant(c, {}, { DPoP: dpop })
  const orgs = new URL(`${base}/admin/realms/${realm}/organizations`)
  let res = await client.fetchProtectedResource(c, tok.access_token, new URL(orgs.href + '?count=5'), 'GET', undefined, undefined, { DPoP: dpop })
  assert(res.status === 200, `GET: HTTP ${res.status} ${res.headers.get('www-authenticate') || ''} ${await res.text()}`)
  const alias = 'smoke-' + Date.now().toString(36)
  res = await client.fetchProtectedResource(c, tok.access_token, orgs, 'POST', JSON.stringify({ name: alias, alias }), jsonHeaders(), { DPoP: dpop })
  const created = await res.json()
  assert(res.status === 201, `POST: HTTP ${res.status} ${JSON.stringify(created)}`)
  const location = res.headers.get('location')
  assert(location === `${orgs.href}/${created.result.id}`, `Location ${location}`)
  res = await client.fetchProtectedResource(c, tok.access_token, new URL(location), 'DELETE', undefined, undefined, { DPoP: dpop })
  assert(res.status === 200, `DELETE Location: HTTP ${res.status}`)
  return `Location ${location}`
})

await step('authorization code + PKCE, confidential client (basic), ID token', async () => {
  const tok = await codeFlow(confidential, 'bob', 'bob-pw')
  const claims = tok.claims()
  assert(claims?.iss === issuer && claims.aud === 'orders-api' || claims.aud?.includes?.('orders-api'), `ID token claims ${JSON.stringify(claims)}`)
  assert(claims.preferred_username === 'bob', 'preferred_username')
  await verifyIDToken(meta, tok.id_token, 'orders-api', claims.nonce)
  assert((await decide(confidential, tok.access_token)) === 'GRANT', 'decision is not GRANT')
  return `sub ${claims.sub}, ID token signature verified`
})

await step('authorization code + PKCE, public client (none) with DPoP (Ed25519)', async () => {
  const pub = new client.Configuration(meta, 'storefront', undefined, client.None())
  client.allowInsecureRequests(pub)
  const dpop = client.getDPoPHandle(pub, await client.randomDPoPKeyPair('Ed25519'))
  const tok = await codeFlow(pub, 'bob', 'bob-pw', { DPoP: dpop })
  assert(tok.token_type.toLowerCase() === 'dpop', `token_type ${tok.token_type}`)
  await verifyIDToken(meta, tok.id_token, 'storefront')
  assert((await decide(pub, tok.access_token, dpop)) === 'GRANT', 'decision is not GRANT')
})

await step('authorization code: a wrong PKCE verifier is refused', async () => {
  const state = client.randomState()
  const authURL = client.buildAuthorizationUrl(confidential, {
    redirect_uri: redirectUri, scope: 'openid', state,
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
  })
  const back = await signIn(authURL, 'bob', 'bob-pw')
  try {
    await client.authorizationCodeGrant(confidential, back, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state })
  } catch (err) {
    assert(err.error === 'invalid_grant', `error ${err.error ?? err.message}`)
    return 'invalid_grant'
  }
  throw new Error('a wrong verifier got a token')
})

await step('password grant (admin-cli), ID token', async () => {
  if (!meta.grant_types_supported?.includes('password')) return { skip: 'not in grant_types_supported' }
  const cli = new client.Configuration(meta, 'admin-cli', undefined, client.None())
  client.allowInsecureRequests(cli)
  const tok = await client.genericGrantRequest(cli, 'password', { username: 'alice', password: 'alice-pw', scope: 'openid' })
  await verifyIDToken(meta, tok.id_token, 'admin-cli')
  const orgs = await client.fetchProtectedResource(cli, tok.access_token, new URL(`${base}/admin/realms/${realm}/organizations`), 'GET')
  assert(orgs.status === 200, `organizations with alice's token: HTTP ${orgs.status}`)
})

await step('userinfo', async () => {
  if (!meta.userinfo_endpoint) return { skip: 'userinfo_endpoint not advertised' }
  const tok = await client.clientCredentialsGrant(confidential)
  await client.fetchUserInfo(confidential, tok.access_token, client.skipSubjectCheck)
})
await step('token introspection', async () => {
  if (!meta.introspection_endpoint) return { skip: 'introspection_endpoint not advertised' }
  const tok = await client.clientCredentialsGrant(confidential)
  const info = await client.tokenIntrospection(confidential, tok.access_token)
  assert(info.active, 'inactive')
})
await step('token revocation', async () => {
  if (!meta.revocation_endpoint) return { skip: 'revocation_endpoint not advertised' }
  const tok = await client.clientCredentialsGrant(confidential)
  await client.tokenRevocation(confidential, tok.access_token)
})

const counts = results.reduce((m, [r]) => ({ ...m, [r]: (m[r] || 0) + 1 }), {})
console.log(`\n${base}: ${counts.PASS || 0} passed, ${counts.FAIL || 0} failed, ${counts.SKIP || 0} skipped`)
process.exit(failures ? 1 : 0)
