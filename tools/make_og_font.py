"""Makes site_gen/assets/og-font-dejavu-sans.npz, the bitmap font the share pictures (og:image) are drawn with,
so that `rtreport build` draws text with numpy alone (no Pillow, no font library). Run once, by hand, where
Playwright and Debian's chromium and fonts-dejavu-core are installed: python tools/make_og_font.py

Each face is DejaVu Sans (Bitstream Vera licence, see site_gen/assets/og-font-LICENSE.txt) rasterised by the
browser's canvas: per character its coverage (uint8, one row of the atlas per face) and its advance in pixels."""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

CHARS = "".join(chr(c) for c in range(32, 127)) + "×✓✗·–—≥µ…"
FACES = {"regular-22": "22px 'DejaVu Sans'", "bold-22": "bold 22px 'DejaVu Sans'", "bold-40": "bold 40px 'DejaVu Sans'"}
DRAW = """([font, chars]) => {
  const c = document.createElement('canvas'), g = c.getContext('2d');
  g.font = font; const m = g.measureText('Hg');
  const asc = Math.ceil(m.fontBoundingBoxAscent), desc = Math.ceil(m.fontBoundingBoxDescent);
  const out = [];
  for (const ch of chars) {
    const adv = Math.round(g.measureText(ch).width), w = Math.max(1, adv + 4), h = asc + desc;
    c.width = w; c.height = h; g.font = font; g.clearRect(0, 0, w, h);
    g.fillStyle = '#000'; g.textBaseline = 'alphabetic';
    g.fillText(ch, 1, asc);
    const d = g.getImageData(0, 0, w, h).data, alpha = [];
    for (let i = 3; i < d.length; i += 4) alpha.push(d[i]);
    out.push({ch, adv, w, h, alpha});
  }
  return out;
}"""


def main(out: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    arrays = {"chars": np.array([ord(c) for c in CHARS], dtype=np.int32)}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.set_content("<html><body></body></html>")
        for name, font in FACES.items():
            glyphs = page.evaluate(DRAW, [font, CHARS])
            h = glyphs[0]["h"]
            atlas = np.concatenate([np.array(g["alpha"], dtype=np.uint8).reshape(h, g["w"]) for g in glyphs], axis=1)
            arrays[f"{name}.atlas"] = atlas
            arrays[f"{name}.width"] = np.array([g["w"] for g in glyphs], dtype=np.int32)
            arrays[f"{name}.advance"] = np.array([g["adv"] for g in glyphs], dtype=np.int32)
        browser.close()
    np.savez_compressed(out, **arrays)
    print(out, out.stat().st_size, "bytes;", json.dumps({k: list(v.shape) for k, v in arrays.items()}))


if __name__ == "__main__":
    main(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[1] / "site_gen" / "assets" / "og-font-dejavu-sans.npz"
    )
