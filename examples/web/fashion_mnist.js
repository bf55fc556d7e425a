// The Fashion-MNIST page (examples/web_fashion_mnist.cpp exports the model next to it): classifies
// the images of data.json with the model in WebGPU and draws each with its predicted label
// (green where it is the true label, red where not). Reports the logits and labels in
// window.tinytReport for tools/web/check_page.py.
import * as model from "./model.js";

const status = document.getElementById("status");
document.title = "Fashion-MNIST in WebGPU";
document.getElementById("title").textContent = "Fashion-MNIST, classified in your browser's WebGPU";
try {
  const data = await (await fetch("data.json")).json();
  const started = performance.now();
  const [logits] = await model.run([new Float32Array(data.images)]);
  const ms = performance.now() - started;
  const n = data.labels.length, classes = logits.length / n;
  const labels = Array.from({ length: n }, (_, i) => {
    const row = logits.subarray(i * classes, (i + 1) * classes);
    return row.indexOf(Math.max(...row));
  });

  const scale = 4, side = 28, cell = side * scale, columns = 4, label = 34;
  const canvas = document.createElement("canvas");
  canvas.width = columns * (cell + 24);
  canvas.height = Math.ceil(n / columns) * (cell + label + 12);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  const pixels = ctx.createImageData(side, side);
  const tile = document.createElement("canvas");
  tile.width = tile.height = side;
  for (let i = 0; i < n; ++i) {
    for (let p = 0; p < side * side; ++p) {
      const v = 255 - Math.round(data.images[i * side * side + p] * 255);
      pixels.data.set([v, v, v, 255], p * 4);
    }
    tile.getContext("2d").putImageData(pixels, 0, 0);
    const x = (i % columns) * (cell + 24) + 12, y = Math.floor(i / columns) * (cell + label + 12) + 6;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(tile, x, y, cell, cell);
    const right = labels[i] === data.labels[i];
    ctx.fillStyle = right ? "#1a7f37" : "#cf222e";
    ctx.font = "bold 14px system-ui, sans-serif";
    ctx.fillText(data.classes[labels[i]], x, y + cell + 16);
    ctx.fillStyle = "#666";
    ctx.font = "12px system-ui, sans-serif";
    ctx.fillText(right ? "right" : `is ${data.classes[data.labels[i]]}`, x, y + cell + 30);
  }
  document.getElementById("out").append(canvas);
  const correct = labels.filter((l, i) => l === data.labels[i]).length;
  status.textContent = `${correct} of ${n} test images classified right, in ${ms.toFixed(0)} ms (loading the model included)`;
  window.tinytReport = { outputs: [Array.from(logits)], labels };
} catch (e) {
  status.textContent = String(e);
  window.tinytReport = { error: String(e && e.stack || e) };
}
