//! Pages of a file for `Read` (tools.md): the requested lines, each cut at [`MAX_LINE_CHARS`],
//! and the file's line count. Trees on the host stream the file, keeping only the requested
//! lines, so a large file costs its page, not its size; other trees page what `read` returns.

use std::io::{self, Read};

use crate::Content;

/// Characters of one line a page keeps; the rest is counted.
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes a streamed page scans at most (its line count needs the whole file).
pub const SCAN_BYTE_CAP: u64 = 4 * 1024 * 1024 * 1024;

/// One kept line of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLine {
    /// 1-based line number.
    pub number: u64,
    /// The line (without its end of line), at most [`MAX_LINE_CHARS`] characters.
    pub text: String,
    /// How many characters were cut from its end.
    pub cut_chars: u64,
}

/// What `read_page` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    /// A text file: the requested lines and how many lines it has (0: empty).
    Text {
        /// Lines `offset..offset+limit` that exist.
        lines: Vec<PageLine>,
        /// The file's line count.
        total: u64,
    },
    /// An image, whole (see [`Content::Image`]).
    Image {
        /// The raw image bytes.
        bytes: Vec<u8>,
        /// Its mime type.
        mime: &'static str,
    },
}

impl Page {
    /// Pages `content` held in memory: lines `offset..offset + limit` (1-based).
    pub fn of_content(content: Content, offset: u64, limit: u64) -> Page {
        match content {
            Content::Image { bytes, mime } => Page::Image { bytes, mime },
            Content::Text(text) => {
                page_reader(text.as_bytes(), offset, limit).unwrap_or(Page::Text {
                    lines: Vec::new(),
                    total: 0,
                })
            }
        }
    }
}

/// Pages a byte stream: keeps lines `offset..offset + limit` (1-based; each cut at
/// [`MAX_LINE_CHARS`] characters, a trailing `\r` dropped) and counts every line, holding no
/// more than one page in memory. Invalid UTF-8 is replaced.
pub fn page_reader(mut reader: impl Read, offset: u64, limit: u64) -> io::Result<Page> {
    let last = offset.saturating_add(limit);
    let mut lines = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut number = 1u64;
    let mut kept: Vec<u8> = Vec::new();
    let (mut kept_chars, mut cut_chars) = (0usize, 0u64);
    let mut last_cut_was_cr = false;
    let (mut bytes_seen, mut newlines, mut ends_with_newline) = (0u64, 0u64, false);
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        bytes_seen += n as u64;
        for &byte in &chunk[..n] {
            let wanted = number >= offset && number < last;
            if byte == b'\n' {
                newlines += 1;
                if wanted {
                    if cut_chars == 0 && kept.last() == Some(&b'\r') {
                        kept.pop();
                    } else if cut_chars > 0 && last_cut_was_cr {
                        cut_chars -= 1;
                    }
                    lines.push(PageLine {
                        number,
                        text: String::from_utf8_lossy(&kept).into_owned(),
                        cut_chars,
                    });
                }
                number += 1;
                kept.clear();
                kept_chars = 0;
                cut_chars = 0;
                last_cut_was_cr = false;
                continue;
            }
            if !wanted {
                continue;
            }
            let continuation = byte & 0xC0 == 0x80;
            if cut_chars == 0 && (continuation || kept_chars < MAX_LINE_CHARS) {
                kept.push(byte);
                if !continuation {
                    kept_chars += 1;
                }
            } else if !continuation {
                cut_chars += 1;
                last_cut_was_cr = byte == b'\r';
            }
        }
        ends_with_newline = chunk[n - 1] == b'\n';
    }
    // As `text.strip_suffix('\n').split('\n')`: a last line without a newline still counts.
    let empty = bytes_seen == 0 || (bytes_seen == 1 && ends_with_newline);
    if !ends_with_newline && !empty && number >= offset && number < last {
        if cut_chars == 0 && kept.last() == Some(&b'\r') {
            kept.pop();
        } else if cut_chars > 0 && last_cut_was_cr {
            cut_chars -= 1;
        }
        lines.push(PageLine {
            number,
            text: String::from_utf8_lossy(&kept).into_owned(),
            cut_chars,
        });
    }
    let total = match (empty, ends_with_newline) {
        (true, _) => 0,
        (false, true) => newlines,
        (false, false) => newlines + 1,
    };
    if empty {
        lines.clear();
    }
    Ok(Page::Text { lines, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-memory definition `Read` always had: split the text without its last newline.
    fn expected(text: &str, offset: u64, limit: u64) -> Page {
        let body = text.strip_suffix('\n').unwrap_or(text);
        if body.is_empty() {
            return Page::Text {
                lines: Vec::new(),
                total: 0,
            };
        }
        let all: Vec<&str> = body.split('\n').collect();
        let lines = all
            .iter()
            .enumerate()
            .skip((offset - 1) as usize)
            .take(limit as usize)
            .map(|(i, line)| {
                let line = line.strip_suffix('\r').unwrap_or(line);
                let (text, cut) = match line.char_indices().nth(MAX_LINE_CHARS) {
                    Some((at, _)) => (&line[..at], line[at..].chars().count() as u64),
                    None => (line, 0),
                };
                PageLine {
                    number: i as u64 + 1,
                    text: text.to_string(),
                    cut_chars: cut,
                }
            })
            .collect();
        Page::Text {
            lines,
            total: all.len() as u64,
        }
    }

    proptest::proptest! {
        #[test]
        fn streaming_pages_match_the_in_memory_definition(
            parts in proptest::collection::vec(
                proptest::prop_oneof!["[a-zé€\r]{0,5}", "\n", "\r\n", "x{1995,2005}", "é{1998,2002}"],
                0..12,
            ),
            offset in 1u64..8,
            limit in 1u64..5,
        ) {
            let text: String = parts.concat();
            let streamed = page_reader(text.as_bytes(), offset, limit).unwrap();
            proptest::prop_assert_eq!(streamed, expected(&text, offset, limit));
        }
    }
}
