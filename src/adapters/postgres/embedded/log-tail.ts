/** Keeps the last N lines of a child's output so a failed start can name its cause. */
export class LogTail {
  private lines: string[] = [];
  constructor(private readonly max: number) {}
  push(text: string): void {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      this.lines.push(line);
      if (this.lines.length > this.max) this.lines.shift();
    }
  }
  text(): string {
    return this.lines.join('\n');
  }
}
