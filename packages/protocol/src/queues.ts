// Burrow's queue admin answers under /burrow/v1/queues: what the server sends and the SDK and the CLI read.

/** A queue's depth. */
export interface QueueDepthWire {
  name: string;
  /** Stored and not yet delivered. */
  ready: number;
  /** Delivered and not acknowledged: held by a consumer, or waiting for a retry after a nack. */
  inFlight: number;
  deadLetters: number;
}

/** A message moved out of its queue, with why. */
export interface DeadLetterWire {
  /** Its id among the dead letters: what requeue and drop take. */
  seq: number;
  /** Deliveries it had before it was moved. */
  attempts: number;
  /** Why it was moved: out of attempts, or given up on by its consumer. */
  reason: string;
  /** The error its consumer gave with the last nack or term. */
  lastError: string | null;
  /** When it was moved (ISO 8601). */
  time: string;
  priority: number | null;
  /** Its sequence in the queue before it was moved. */
  queueSeq: number;
  headers: Record<string, string>;
  /** The payload, always. */
  dataBase64: string;
  /** The payload as text, when it is valid UTF-8. */
  data?: string;
}

/** A page of dead letters, oldest first. */
export interface DeadLetterPageWire {
  items: DeadLetterWire[];
  /** Dead letters of the queue in all. */
  total: number;
  /** Pass as `after` for the next page; null on the last. */
  next: number | null;
}

/** What requeuing or dropping all of a queue's dead letters did. */
export interface RequeuedAllWire {
  requeued: number;
}
export interface DroppedAllWire {
  dropped: number;
}
