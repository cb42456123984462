// The last `limit` bytes of a stream, for a run's result (what a command or code printed last matters most).
export class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}
  push(b: Uint8Array): void {
    this.chunks.push(Buffer.from(b));
    this.size += b.length;
    while (this.size > this.limit && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString("utf8");
  }
}
