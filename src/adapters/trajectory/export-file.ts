import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ValidationError } from '../../domain/errors';
import type { LineFile } from '../../ports/trajectory';

/**
 * Writes an export atomically: lines go to a temp file beside the target, which is renamed over it
 * only when the whole export succeeded. On any error (verifier abort, database error, interrupt) the
 * temp file is removed, so a failed export never leaves a partial file.
 */
export class AtomicLineFile implements LineFile {
  private readonly stream: fs.WriteStream;
  private failed: Error | undefined;

  private constructor(
    readonly target: string,
    readonly temp: string,
  ) {
    this.stream = fs.createWriteStream(temp, { flags: 'wx', mode: 0o600 });
    this.stream.on('error', (e) => {
      this.failed = e;
    });
  }

  /** Checks the target can be written before any work starts (clear error, nothing created). */
  static open(target: string): AtomicLineFile {
    const abs = path.resolve(target);
    const dir = path.dirname(abs);
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(abs);
    } catch {
      st = undefined;
    }
    if (st?.isDirectory()) throw new ValidationError(`cannot write ${target}: it is a directory`, { field: 'out' });
    try {
      fs.accessSync(dir, fs.constants.W_OK);
      if (st) fs.accessSync(abs, fs.constants.W_OK);
    } catch (e) {
      throw new ValidationError(`cannot write ${target}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
        field: 'out',
      });
    }
    return new AtomicLineFile(abs, path.join(dir, `.${path.basename(abs)}.partial-${process.pid}-${randomUUID()}`));
  }

  /** A temp file in the system temp directory (for stdout and for artifact uploads). */
  static temporary(): AtomicLineFile {
    const temp = path.join(os.tmpdir(), `trajectory-export-${process.pid}-${randomUUID()}.jsonl`);
    return new AtomicLineFile(temp, `${temp}.partial`);
  }

  write = async (line: string): Promise<void> => {
    this.check();
    if (!this.stream.write(line)) await new Promise<void>((res) => this.stream.once('drain', res));
    this.check();
  };

  private check(): void {
    const failed = this.failed;
    if (failed !== undefined) throw failed;
  }

  private async close(): Promise<void> {
    await new Promise<void>((res) => this.stream.end(res));
    this.check();
  }

  /** Makes the file visible under its name. */
  async commit(): Promise<string> {
    await this.close();
    await fs.promises.rename(this.temp, this.target);
    return this.target;
  }

  /** Removes the temp file (and never the target). */
  async discard(): Promise<void> {
    await new Promise<void>((res) => this.stream.end(res));
    await fs.promises.rm(this.temp, { force: true });
  }
}
