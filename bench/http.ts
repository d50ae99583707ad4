// A lean keep-alive HTTP client for loopback measurements: node:http with one shared agent, the
// request bodies serialised once up front, so the client adds as little as possible per request.
import { Agent, request } from 'node:http';

export interface HttpTarget {
  readonly port: number;
  readonly apiKey: string;
  readonly agent: Agent;
}

export interface HttpResponse {
  readonly status: number;
  readonly body: string;
  readonly elapsedMs: number;
}

export function keepAliveAgent(maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
}

/** POSTs a ready JSON body; resolves once the whole response has arrived. */
export function postJson(target: HttpTarget, path: string, body: Buffer): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      {
        host: '127.0.0.1',
        port: target.port,
        method: 'POST',
        path,
        agent: target.agent,
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'ocp-apim-subscription-key': target.apiKey,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            elapsedMs: performance.now() - started,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** GETs a path; resolves once the whole response has arrived. */
export function getJson(target: HttpTarget, path: string): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      { host: '127.0.0.1', port: target.port, method: 'GET', path, agent: target.agent, headers: { 'ocp-apim-subscription-key': target.apiKey } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), elapsedMs: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
