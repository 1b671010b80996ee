// A small Markdown renderer that builds Preact nodes, never HTML strings: text is always text,
// so no HTML in model text or a tool result can execute. Links are kept only for http(s).
//
// The text is cut into chunks at blank lines outside code fences, and each chunk is a memoised
// component: while a reply streams in, only its last chunk is parsed again.
import { ComponentChildren } from "preact";
import { memo } from "preact/compat";

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

/// The chunks of `text`: runs of lines separated by blank lines, a code fence kept whole.
export function chunks(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let fence = false;
  let at = 0;
  while (at <= text.length) {
    let end = text.indexOf("\n", at);
    if (end < 0) end = text.length;
    const line = text.slice(at, end);
    if (line.startsWith("```")) fence = !fence;
    else if (!fence && !line.trim()) {
      if (at > start) out.push(text.slice(start, at));
      start = end + 1;
    }
    at = end + 1;
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

const Chunk = memo(function Chunk({ text }: { text: string }) {
  return <>{blocks(text)}</>;
});

/// Model text as Markdown.
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div class="md">
      {chunks(text).map((c, i) => (
        <Chunk key={i} text={c} />
      ))}
    </div>
  );
});

function blocks(text: string): ComponentChildren[] {
  const lines = text.split("\n");
  const out: ComponentChildren[] = [];
  let i = 0;
  let para: string[] = [];
  const flush = () => {
    if (para.length) out.push(<p key={`p${i}`}>{inline(para.join(" "))}</p>);
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
      out.push(<pre key={`c${i}`}><code>{body.join("\n")}</code></pre>);
      continue;
    }
    const h = /^(#{1,4})\s+(.*)$/.exec(line);
    if (h) {
      flush();
      const level = h[1].length + 2;
      const Tag = `h${Math.min(level, 6)}` as "h3";
      out.push(<Tag key={`h${i}`}>{inline(h[2])}</Tag>);
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
      out.push(ordered ? <ol key={`o${i}`}>{items}</ol> : <ul key={`u${i}`}>{items}</ul>);
      continue;
    }
    if (!line.trim()) flush();
    else para.push(line);
    i++;
  }
  flush();
  return out;
}
