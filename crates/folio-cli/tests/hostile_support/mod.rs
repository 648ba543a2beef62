//! Hostile model output for the playground's browser tests: known XSS vectors (raw HTML, event
//! handlers, script URLs in every spelling Markdown and HTML allow, mutation-XSS shapes, fence
//! info strings, link titles, entities), each calling `alert(n)` with its own `n`, so the test
//! tells which one ran. [`hostile_replies`] puts each one-line vector in every Markdown context
//! the page renders (a paragraph, emphasis, a list item, a quote, a heading, a table cell, link
//! text); [`hostile_vectors`] is the plain list, for tool arguments and results.

/// The vectors, `{js}` standing for the script each one tries to run.
const VECTORS: &[&str] = &[
    // Raw HTML: markdown-it shows it as text.
    "<script>{js}</script>",
    "<script src=\"data:text/javascript,{js}\"></script>",
    "<img src=x onerror={js}>",
    "<img src=\"x\" onerror=\"{js}\">",
    "<IMG SRC=x OnErRoR={js}>",
    "<img src=x:alert(alt) onerror=eval(src) alt={js}>",
    "<svg onload={js}>",
    "<svg/onload={js}>",
    "<svg><script>{js}</script></svg>",
    "<svg><a xlink:href=\"javascript:{js}\"><text x=20 y=20>x</text></a></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror={js}>",
    "<math href=\"javascript:{js}\">x</math>",
    "<iframe src=\"javascript:{js}\"></iframe>",
    "<iframe srcdoc=\"<script>parent.{js}</script>\"></iframe>",
    "<a href=\"javascript:{js}\">click</a>",
    "<a href=\"&#x6A;avascript:{js}\">click</a>",
    "<a href=javascript&colon;{js}>click</a>",
    "<a href=\"  javascript:{js}\">click</a>",
    "<body onload={js}>",
    "<details open ontoggle={js}>",
    "<video><source onerror={js}></video>",
    "<audio src=x onerror={js}>",
    "<input autofocus onfocus={js}>",
    "<select autofocus onfocus={js}></select>",
    "<textarea autofocus onfocus={js}></textarea>",
    "<marquee onstart={js}>x</marquee>",
    "<object data=\"javascript:{js}\"></object>",
    "<embed src=\"javascript:{js}\">",
    "<form><button formaction=\"javascript:{js}\">x</button></form>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:{js}\">",
    "<base href=\"javascript:{js}//\">",
    "<link rel=stylesheet href=\"javascript:{js}\">",
    "<style>@import 'javascript:{js}';</style>",
    "<div style=\"background:url(javascript:{js})\">x</div>",
    "<noscript><p title=\"</noscript><img src=x onerror={js}>\">",
    "<template><img src=x onerror={js}></template>",
    "<!--<img src=\"--><img src=x onerror={js}//\">",
    "<scr<script>ipt>{js}</scr</script>ipt>",
    "<div onmouseover={js} style=\"position:fixed;inset:0\">x</div>",
    // Entities that decode to markup or script URLs.
    "&lt;img src=x onerror={js}&gt;",
    "&#60;script&#62;{js}&#60;/script&#62;",
    "&#x3C;svg onload={js}&#x3E;",
    // Markdown links and images with script URLs.
    "[x](javascript:{js})",
    "[x](JaVaScRiPt:{js})",
    "[x](  javascript:{js})",
    "[x](<javascript:{js}>)",
    "[x](javascript&#58;{js})",
    "[x](javascript&colon;{js})",
    "[x](&#106;avascript:{js})",
    "[x](javas&#99;ript:{js})",
    "[x](java%0ascript:{js})",
    "[x](vbscript:msgbox({js}))",
    "[x](data:text/html,<script>{js}</script>)",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](file:///etc/passwd#{js})",
    "[x](javascript:{js} \"title\")",
    "<javascript:{js}>",
    "[x](https://example.com\" onclick=\"{js})",
    "[x](https://example.com \"t\\\" onmouseover=\\\"{js}\")",
    "![x](javascript:{js})",
    "![x](x\" onerror=\"{js})",
    "![x\"onerror=\"{js}](https://example.com/a.png)",
    "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![x](data:image/png;base64,iVBORw0KGgo=#{js})",
    "[![x](https://example.com/a.png)](javascript:{js})",
    "https://example.com/\"><img src=x onerror={js}>",
    "<https://example.com/\"onmouseover=\"{js}>",
    "`<img src=x onerror={js}>`",
];

/// Vectors that span lines (code fences and reference definitions), sent as they are.
const BLOCK_VECTORS: &[&str] = &[
    "[x][ref]\n\n[ref]: javascript:{js}",
    "[x][ref]\n\n[ref]: https://example.com \"a\\\" onmouseover=\\\"{js}\"",
    "```\"><img src=x onerror={js}>\ncode\n```",
    "```js onload={js}\nlet x = 1;\n```",
    "```html\n<script>{js}</script>\n```",
    "~~~<svg/onload={js}>\n<img src=x onerror={js}>\n~~~",
    "    <img src=x onerror={js}>",
    "<div>\n\n<img src=x onerror={js}>\n\n</div>",
    "| a | b |\n| - | - |\n| <img src=x onerror={js}> | [x](javascript:{js}) |",
];

/// Every vector with its own `alert(n)`, `n` from 1 (one-line vectors first).
pub fn hostile_vectors() -> Vec<String> {
    VECTORS
        .iter()
        .chain(BLOCK_VECTORS)
        .enumerate()
        .map(|(i, vector)| vector.replace("{js}", &format!("alert({})", i + 1)))
        .collect()
}

/// One model reply per vector: a one-line vector in every Markdown context, a block one alone.
pub fn hostile_replies() -> Vec<String> {
    hostile_vectors()
        .into_iter()
        .enumerate()
        .map(|(i, vector)| {
            if i >= VECTORS.len() {
                return vector;
            }
            let v = &vector;
            format!(
                "{v}\n\nText **{v}** and *{v}*.\n\n- {v}\n- item\n\n> {v}\n\n## {v}\n\n| h |\n| - |\n| {v} |\n\n[{v}](https://example.com/)"
            )
        })
        .collect()
}

/// How many placements the replies hold (vectors times the contexts each appears in).
pub fn hostile_placements() -> usize {
    VECTORS.len() * 8 + BLOCK_VECTORS.len()
}
