// nanomx-trace viewer: the trace data embedded in the page by `nanomx-trace view` (view.cc
// writes it): base64 of [u32 decompressed size][gzip of [u32 meta length][meta JSON][pad to 8]
// [typed-array sections]].
'use strict';

(function (viewer) {
  async function decodeData() {
    const text = document.getElementById('trace-data').textContent.trim();
    const raw = atob(text);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    // The first 4 bytes give the decompressed size, so the chunks go straight into one buffer
    // (faster than collecting them with Response.arrayBuffer()).
    const size = new DataView(bytes.buffer).getUint32(0, true);
    const inflate = new DecompressionStream('gzip');
    const writer = inflate.writable.getWriter();
    writer.write(bytes.subarray(4));
    writer.close();
    const reader = inflate.readable.getReader();
    const out = new Uint8Array(size);
    let filled = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (filled + value.length > size) throw new Error('embedded data is larger than its header says');
      out.set(value, filled);
      filled += value.length;
    }
    if (filled !== size) throw new Error('embedded data is cut short: ' + filled + ' of ' + size + ' bytes');
    const buffer = out.buffer;
    const metaLength = new DataView(buffer).getUint32(0, true);
    const meta = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, metaLength)));
    let base = 4 + metaLength;
    base += (8 - (base % 8)) % 8;
    const arrays = {};
    for (const [name, [offset, count, type]] of Object.entries(meta.sections)) {
      const Type = type === 'u32' ? Uint32Array : Float64Array;
      const array = new Type(buffer, base + offset, count);
      if (type === 'f64d') {  // stored as differences from the previous element
        for (let i = 1; i < count; i++) array[i] += array[i - 1];
      }
      arrays[name] = array;
    }
    return { meta, arrays };
  }

  viewer.decodeData = decodeData;
})(window.nanomxViewer);
