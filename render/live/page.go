package live

import (
	"fmt"
	"html"
	"io"
)

// FrameHeader is the header the page's requests for a frame carry: a page
// of another origin cannot send it without a preflight no one answers.
const FrameHeader = "X-Llmrec-Top"

// Page writes the self-updating page of llmrec top --listen: every
// refreshMs it asks /frame for the text frame (with FrameHeader) and shows
// it, states and bands coloured. Everything is inline: no asset is
// fetched from anywhere.
func Page(w io.Writer, title string, refreshMs int) error {
	_, err := fmt.Fprintf(w, pageHTML, html.EscapeString(title), refreshMs, FrameHeader)
	return err
}

const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>llmrec top · %s</title>
<style>
body{margin:0;background:#111;color:#ddd;font:13px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{margin:0;padding:12px 16px;white-space:pre}
.busy{color:#5c5}.bad{color:#f55;font-weight:bold}.warn{color:#fc3}#status{padding:4px 16px;color:#888;border-top:1px solid #333}
</style></head>
<body><pre id="frame">loading…</pre><div id="status"></div>
<script>
"use strict";
const every = %d, header = %q;
const esc = s => s.replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c]));
function paint(text) {
  return esc(text)
    .replace(/\b(stalled|down)\b/g, '<span class="bad">$1</span>')
    .replace(/\b(saturated)\b/g, '<span class="bad">$1</span>')
    .replace(/\b(busy)\b/g, '<span class="busy">$1</span>')
    .replace(/\b(warn|saturating)\b/g, '<span class="warn">$1</span>');
}
async function tick() {
  const st = document.getElementById("status");
  try {
    const r = await fetch("frame", {headers: {[header]: "1"}, cache: "no-store"});
    if (!r.ok) throw new Error(r.status + " " + (await r.text()));
    document.getElementById("frame").innerHTML = paint(await r.text());
    st.textContent = "updated " + new Date().toISOString().slice(11, 19) + " UTC";
  } catch (e) {
    st.textContent = "no frame: " + e.message;
  }
  setTimeout(tick, every);
}
tick();
</script></body></html>
`
