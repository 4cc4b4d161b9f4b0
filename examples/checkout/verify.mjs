// How a checkout backend checks a pushonce admission token, in Node with `jose`
// (docs/operations.md "Checking admission at the checkout").
//
//   PUSHONCE_URL=https://waiting.example.com node verify.mjs TOKEN
//   PUSHONCE_URL=... PUSHONCE_API_KEY=... node verify.mjs TOKEN   # also asks the state
//
// Offline: the signature against the gateway's JWKS (fetched once and cached by jose), the
// issuer, exp. With an API key: GET /api/admission/ID as well, so that a released or expired
// admission is refused. Prints one JSON object; exit 0 when admitted, 1 when not.
import { createRemoteJWKSet, jwtVerify } from 'jose';

const token = process.argv[2];
const base = process.env.PUSHONCE_URL ?? 'http://127.0.0.1:8080';
const issuer = process.env.PUSHONCE_ADMISSION_ISSUER ?? 'pushonce';
const apiKey = process.env.PUSHONCE_API_KEY;
const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', base));

function answer(out, ok) {
  console.log(JSON.stringify(out));
  process.exit(ok ? 0 : 1);
}

try {
  const { payload } = await jwtVerify(token ?? '', jwks, { issuer, algorithms: ['ES256'] });
  const out = {
    valid: true,
    user: payload.sub,
    queue: payload.queue,
    resource: payload.resource,
    id: payload.jti,
  };
  if (apiKey) {
    const r = await fetch(new URL(`/api/admission/${encodeURIComponent(payload.jti)}`, base), {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const record = r.status === 404 ? null : await r.json();
    // A record names the user and resource it was made for: one that names others is not
    // this token's admission ("mismatch").
    out.state = !record
      ? 'unknown'
      : record.user !== payload.sub || record.resource !== payload.resource
        ? 'mismatch'
        : record.state;
    // Assigned or accepted: the user may go on. Released, expired, unknown, mismatch: refuse.
    out.valid = out.state === 'assigned' || out.state === 'accepted';
  }
  answer(out, out.valid);
} catch (e) {
  const error = e.code === 'ERR_JWT_EXPIRED' ? 'expired' : 'invalid';
  answer({ valid: false, error, message: e.message }, false);
}
