import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export function Sparkline({ label, xs, ys, unit }: { label: string; xs: number[]; ys: number[]; unit: string }) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    plot.current = new uPlot(
      { width: 320, height: 90, legend: { show: false }, axes: [{ show: false }, { size: 40 }], series: [{}, { label, stroke: '#0b63c5', width: 2 }], cursor: { show: false } },
      [[], []],
      host.current!,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => plot.current?.setData([xs, ys]), [xs, ys]);
  const last = ys[ys.length - 1];
  return (
    <figure class="card" aria-label={`${label} sparkline`}>
      <figcaption>
        {label}: {last === undefined ? '…' : `${last.toFixed(1)} ${unit}`}
      </figcaption>
      <div ref={host} />
    </figure>
  );
}
