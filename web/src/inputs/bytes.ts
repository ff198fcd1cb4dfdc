// Random-access reads of a model file in the browser (File.slice), in chunks, so a reader can walk a 500 MB file's
// structure and skip its weights without reading them.

export interface ByteSource {
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** A File or Blob as a ByteSource: each read is one `slice` of the bytes asked for. */
export function blobSource(blob: Blob): ByteSource {
  return {
    size: blob.size,
    read: async (offset, length) => new Uint8Array(await blob.slice(offset, Math.min(blob.size, offset + length)).arrayBuffer()),
  };
}

/** Bytes in memory as a ByteSource (tests). */
export function bufferSource(bytes: Uint8Array): ByteSource {
  return { size: bytes.length, read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)) };
}

export class FormatError extends Error {}

const CHUNK = 1 << 16;

/** Reads through a ByteSource with a small window cache; `ensure(pos, n)` then synchronous reads inside the window. */
export class Window {
  private start = 0;
  private data: Uint8Array = new Uint8Array(0);
  /** bytes actually read from the source (tests check that weights are skipped) */
  bytesRead = 0;
  constructor(readonly src: ByteSource) {}

  async ensure(pos: number, n: number): Promise<void> {
    if (pos >= this.start && pos + n <= this.start + this.data.length) return;
    if (pos < 0 || pos + n > this.src.size) throw new FormatError(`read past the end of the file (at byte ${pos})`);
    const len = Math.min(this.src.size - pos, Math.max(n, CHUNK));
    this.data = await this.src.read(pos, len);
    this.bytesRead += this.data.length;
    this.start = pos;
    if (this.data.length < n) throw new FormatError(`short read at byte ${pos}`);
  }

  /** byte at `pos`; the caller made sure it is in the window */
  at(pos: number): number {
    return this.data[pos - this.start];
  }

  async bytes(pos: number, n: number): Promise<Uint8Array> {
    if (n > CHUNK) return this.src.read(pos, n);
    await this.ensure(pos, n);
    return this.data.subarray(pos - this.start, pos - this.start + n);
  }

  async u32(pos: number): Promise<number> {
    await this.ensure(pos, 4);
    return (this.at(pos) | (this.at(pos + 1) << 8) | (this.at(pos + 2) << 16)) + this.at(pos + 3) * 2 ** 24;
  }

  async i32(pos: number): Promise<number> {
    return (await this.u32(pos)) | 0;
  }

  async u16(pos: number): Promise<number> {
    await this.ensure(pos, 2);
    return this.at(pos) | (this.at(pos + 1) << 8);
  }

  async u8(pos: number): Promise<number> {
    await this.ensure(pos, 1);
    return this.at(pos);
  }
}

export const utf8 = new TextDecoder("utf-8", { fatal: false });
