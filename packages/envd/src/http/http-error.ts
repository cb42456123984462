/** An error with an HTTP status, for the plain-HTTP endpoints; its body is always `{"code": <int>, "message"}`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "HttpError";
  }
}
