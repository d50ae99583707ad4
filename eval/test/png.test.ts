import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { drawLineChart } from '../src/chart.js';
import { crc32, createImage, encodePng, setPixel } from '../src/png.js';

interface Chunk {
  type: string;
  data: Buffer;
  crc: number;
}

function chunks(png: Buffer): Chunk[] {
  const out: Chunk[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    out.push({
      type: png.toString('ascii', at + 4, at + 8),
      data: png.subarray(at + 8, at + 8 + length),
      crc: png.readUInt32BE(at + 8 + length),
    });
    at += 12 + length;
  }
  return out;
}

describe('png', () => {
  it('crc32 of "123456789" is 0xCBF43926 (the standard check value)', () => {
    expect(crc32(Buffer.from('123456789', 'ascii'))).toBe(0xcbf43926);
  });

  it('encodes a 3x2 RGB image that decodes back to its pixels', () => {
    const image = createImage(3, 2, [255, 255, 255]);
    setPixel(image, 0, 0, [255, 0, 0]);
    setPixel(image, 2, 1, [0, 0, 255]);
    setPixel(image, 9, 9, [0, 0, 0]); // clipped
    const png = encodePng(image);
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const cs = chunks(png);
    expect(cs.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    for (const c of cs) expect(c.crc).toBe(crc32(Buffer.concat([Buffer.from(c.type, 'ascii'), c.data])));
    const ihdr = cs[0]?.data as Buffer;
    expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9]]).toEqual([3, 2, 8, 2]);
    const raw = inflateSync(cs[1]?.data as Buffer);
    // Two scanlines of 1 filter byte + 9 RGB bytes.
    expect([...raw]).toEqual([0, 255, 0, 0, 255, 255, 255, 255, 255, 255, 0, 255, 255, 255, 255, 255, 255, 0, 0, 255]);
  });

  it('draws a chart with both series colours on it', () => {
    const image = drawLineChart({
      width: 400,
      height: 300,
      title: 'test',
      xLabel: 'x',
      yLabel: 'y',
      xDomain: [0, 10],
      yDomain: [0, 1],
      xTicks: [0, 5, 10],
      yTicks: [0, 0.5, 1],
      series: [
        { name: 'a', color: [31, 119, 180], points: [{ x: 0, y: 0 }, { x: 10, y: 1 }] },
        { name: 'b', color: [214, 39, 40], points: [{ x: 0, y: 1 }, { x: 5, y: null }, { x: 10, y: 0 }] },
      ],
    });
    const has = (r: number, g: number, b: number): boolean => {
      for (let i = 0; i < image.pixels.length; i += 3) {
        if (image.pixels[i] === r && image.pixels[i + 1] === g && image.pixels[i + 2] === b) return true;
      }
      return false;
    };
    expect(has(31, 119, 180)).toBe(true);
    expect(has(214, 39, 40)).toBe(true);
  });
});
