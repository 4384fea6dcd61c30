/**
 * Export of a chart as a standalone SVG or PNG file and of text (CSV) files, all in the
 * browser: charts carry their own `<style>`, so the serialised SVG looks like the page.
 */

/** The SVG element as a standalone document (XML declaration, SVG namespace). */
export function serializeSvg(svg: SVGSVGElement): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('xmlns:xlink', 'http://www.w3.org/1999/xlink');
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(clone)}`;
}

/** Starts a download of `blob` as `filename`. */
export function downloadBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  // Revoke later: some browsers read the URL after click() returns.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Downloads a chart as `<name>.svg`. */
export function downloadSvg(svg: SVGSVGElement, name: string): void {
  downloadBlob(new Blob([serializeSvg(svg)], { type: 'image/svg+xml' }), `${name}.svg`);
}

/**
 * Downloads a chart as `<name>.png` at `scale`× its size on a white background.
 * @throws Error (async) when the browser cannot rasterise the SVG.
 */
export async function downloadPng(svg: SVGSVGElement, name: string, scale = 2): Promise<void> {
  const width = Number(svg.getAttribute('width')) || svg.viewBox.baseVal.width;
  const height = Number(svg.getAttribute('height')) || svg.viewBox.baseVal.height;
  const url = URL.createObjectURL(new Blob([serializeSvg(svg)], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error('the browser could not rasterise the chart'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('no 2D canvas');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    const blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, 'image/png'));
    if (!blob) throw new Error('PNG encoding failed');
    downloadBlob(blob, `${name}.png`);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Downloads text (e.g. CSV) as `filename`. */
export function downloadText(text: string, filename: string, type = 'text/csv;charset=utf-8'): void {
  downloadBlob(new Blob([text], { type }), filename);
}

/** A file-name-safe slug: `TTFT CDF (ms)` → `ttft-cdf-ms`. */
export function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'chart';
}
