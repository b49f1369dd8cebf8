import type { FastifyReply } from 'fastify';
import { JsonText } from '../domain/receipt-service.ts';

/**
 * Sends a body that is already JSON text (built by the database), skipping the route's response
 * serializer: Fastify sends a string as it is when the content type is JSON. The route's schema
 * still documents the shape; the tests hold the text to it.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json);
}

/** Sends a service's answer: JSON text as it is, any other value through the route's serializer. */
export function sendAnswer(reply: FastifyReply, answer: unknown): FastifyReply {
  return answer instanceof JsonText ? sendJsonText(reply, answer.text) : reply.send(answer);
}
