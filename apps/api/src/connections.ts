// The cap on open client connections (MAX_CONNECTIONS). Node's own `server.maxConnections` closes
// a connection beyond it without a word; clients then retry at once or report a network failure.
// Here a connection beyond the cap gets a raw `HTTP/1.1 503` with Retry-After and the platform's
// error body before it is closed, and never reaches the HTTP parser, so it costs no route work.
//
// The server's own 'connection' listeners (Node's HTTP parser set-up) are moved behind a gate that
// calls them only for connections under the cap. The request, headers and keep-alive timeouts
// (REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS) are set where app.ts builds the
// server; together they make a slow or idle client give its slot back. There is no socket idle
// timeout (Fastify's connectionTimeout): it would also cut a long computation whose socket is quiet,
// while the request timeout only counts the time to receive the request.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { ERRORS } from './errors.js';

/**
 * How long a refused connection may stay open after its answer, so the client reads the answer
 * before the close (closing at once with its request unread would reset the connection).
 */
export const REFUSED_LINGER_MS = 1_000;

export interface ConnectionGate {
  /** Connections admitted and still open. */
  readonly open: number;
  /** Connections refused since the gate was installed. */
  readonly refused: number;
}

function refusal(maxConnections: number): string {
  const body = JSON.stringify({
    error: {
      code: ERRORS.TooManyConnections.code,
      message: `The server has ${maxConnections} connections open, its limit. Retry after 1 second.`,
    },
  });
  return [
    'HTTP/1.1 503 Service Unavailable',
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Retry-After: 1',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Installs the cap on `server`; call it before the server listens. */
export function limitConnections(server: Server, maxConnections: number): ConnectionGate {
  const admit = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const answer = refusal(maxConnections);
  const gate = { open: 0, refused: 0 };
  server.on('connection', (socket: Socket) => {
    if (gate.open >= maxConnections) {
      gate.refused += 1;
      socket.on('error', () => undefined);
      socket.end(answer);
      // Reads and drops whatever the client sends until it closes or the linger ends.
      socket.resume();
      const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
      linger.unref();
      socket.once('close', () => clearTimeout(linger));
      return;
    }
    gate.open += 1;
    socket.once('close', () => {
      gate.open -= 1;
    });
    for (const listener of admit) listener.call(server, socket);
  });
  return gate;
}
