/**
 * Operations that take a JSON body refuse one of another media type with 415, before any route
 * runs: without this, a form or text body is not parsed (or parsed as a form), and the call is
 * refused for fields it never meant to leave out.
 */
import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';

/** The error the body parser's own refusals look like (http-errors): the API errors filter maps its type. */
export class UnsupportedContentTypeError extends Error {
  readonly status = 415;
  readonly type = 'content-type.unsupported';
  constructor(readonly contentType: string | undefined) {
    super(`content type ${contentType ?? '(none)'} is not supported`);
  }
}

/** Whether the request carries a body (a non-zero length, or chunks). */
function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Whether the media type is application/json, whatever its parameters (the charset is the parser's to judge). */
function isJson(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

@Injectable()
export class JsonBodyOnly implements NestMiddleware {
  /** Passes requests without a body or with a JSON one; refuses the rest with 415 (thrown: Nest hands it to the filters). */
  use(req: Request, _res: Response, next: NextFunction): void {
    const contentType = req.headers['content-type'];
    if (hasBody(req) && !isJson(contentType)) throw new UnsupportedContentTypeError(contentType);
    next();
  }
}
