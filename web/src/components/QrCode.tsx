import QRCode from 'qrcode';
import { useMemo } from 'react';
import './qr.css';

/**
 * A QR code drawn as SVG from the qrcode package's module matrix (no inline markup, no canvas). Its
 * colours are literal, not theme tokens: scanners need dark modules on a light ground.
 */
export function QrCode(props: { text: string; size?: number; label: string }) {
  const { size, path } = useMemo(() => {
    const qr = QRCode.create(props.text, { errorCorrectionLevel: 'M' });
    const n = qr.modules.size;
    let d = '';
    for (let y = 0; y < n; y++) {
      for (let x = 0; x < n; x++) if (qr.modules.get(y, x)) d += `M${x + 4} ${y + 4}h1v1h-1z`;
    }
    return { size: n + 8, path: d };
  }, [props.text]);
  return (
    <svg
      className="qr"
      role="img"
      aria-label={props.label}
      data-testid="qr-code"
      viewBox={`0 0 ${size} ${size}`}
      width={props.size ?? 220}
      height={props.size ?? 220}
      shapeRendering="crispEdges"
    >
      <rect width={size} height={size} fill="#fff" />
      <path d={path} fill="#111827" />
    </svg>
  );
}
