// A small Markdown renderer that builds Preact nodes, never HTML strings: text is always text,
// so no HTML in model text or a tool result can execute. Links are kept only for http(s).
import { ComponentChildren } from "preact";

function inline(text: string, key = 0): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  const re = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  let at = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m.index > at) out.push(text.slice(at, m.index));
    const s = m[0];
    const k = `${key}-${m.index}`;
    if (m[1]) out.push(<code key={k}>{s.slice(1, -1)}</code>);
    else if (m[2]) out.push(<strong key={k}>{inline(s.slice(2, -2), key + 1)}</strong>);
    else if (m[3]) out.push(<em key={k}>{inline(s.slice(1, -1), key + 1)}</em>);
    else {
      const close = s.indexOf("](");
      const label = s.slice(1, close);
      const href = s.slice(close + 2, -1);
      if (/^https?:\/\//i.test(href))
        out.push(
          <a key={k} href={href} target="_blank" rel="noopener noreferrer">
            {label}
          </a>,
        );
      else out.push(s);
    }
    at = m.index + s.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

export function Markdown({ text }: { text: string }) {
  const lines = text.split("\n");
  const blocks: ComponentChildren[] = [];
  let i = 0;
  let para: string[] = [];
  const flush = () => {
    if (para.length) blocks.push(<p key={`p${i}`}>{inline(para.join(" "))}</p>);
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) body.push(lines[i++]);
      i++;
      blocks.push(<pre key={`c${i}`}><code>{body.join("\n")}</code></pre>);
      continue;
    }
    const h = /^(#{1,4})\s+(.*)$/.exec(line);
    if (h) {
      flush();
      const level = h[1].length + 2;
      const Tag = `h${Math.min(level, 6)}` as "h3";
      blocks.push(<Tag key={`h${i}`}>{inline(h[2])}</Tag>);
      i++;
      continue;
    }
    if (/^\s*([-*]|\d+\.)\s+/.test(line)) {
      flush();
      const ordered = /^\s*\d+\./.test(line);
      const items: ComponentChildren[] = [];
      while (i < lines.length && /^\s*([-*]|\d+\.)\s+/.test(lines[i])) {
        items.push(<li key={i}>{inline(lines[i].replace(/^\s*([-*]|\d+\.)\s+/, ""))}</li>);
        i++;
      }
      blocks.push(ordered ? <ol key={`o${i}`}>{items}</ol> : <ul key={`u${i}`}>{items}</ul>);
      continue;
    }
    if (!line.trim()) flush();
    else para.push(line);
    i++;
  }
  flush();
  return <div class="md">{blocks}</div>;
}
