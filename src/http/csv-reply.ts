/** Sends an export as a text/csv download (src/lib/csv.ts writes it). */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** RFC 4180's media type, UTF-8; a download named `filename`. A stream is sent as it is written. */
export function sendCsv(reply: FastifyReply, filename: string, body: string | AsyncIterable<string>): FastifyReply {
  reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${filename}"`);
  return reply.send(typeof body === 'string' ? body : Readable.from(body));
}

/** The 200 answer of a route that also exports CSV: its JSON schema, and the CSV's header row as the example. */
export function jsonOrCsv(description: string, json: unknown, csvHeader: string) {
  return {
    description,
    content: { 'application/json': { schema: json }, 'text/csv': { schema: { type: 'string', examples: [csvHeader] } } },
  };
}
