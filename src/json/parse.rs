//! The strict RFC 8259 parser behind [`parse`]: one value surrounded by optional
//! whitespace (space, tab, line feed, carriage return), nothing else. Strings must be
//! valid (no raw control characters, only the standard escapes, `\u` surrogates only
//! in pairs); numbers follow the JSON grammar (no leading zeros, no `+`, no bare `.` or
//! exponent) and stay text; containers nest at most [`MAX_DEPTH`] deep.

use super::{Number, Value};

/// The deepest nesting of arrays and objects accepted: 127 containers inside one
/// another, the same limit as `serde_json` (whose recursion limit of 128 refuses the
/// 128th level). Deeper input is refused rather than exhausting the stack.
pub const MAX_DEPTH: usize = 127;

/// Why a text is not JSON, and the byte offset where the parser noticed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at byte {offset}")]
pub struct Error {
    message: &'static str,
    offset: usize,
}

impl Error {
    /// What is wrong, e.g. `trailing characters` or `lone surrogate in \u escape`.
    pub fn message(&self) -> &'static str {
        self.message
    }

    /// The byte offset in the text where the problem was found.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

/// Parses `text` as exactly one JSON value (see the module documentation for what is
/// refused). Never panics.
pub fn parse(text: &str) -> Result<Value, Error> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    let value = p.value()?;
    p.skip_ws();
    if p.pos < p.bytes.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(value)
}

/// The length of the JSON number at `start` (`-? int frac? exp?`), or `None` when no
/// valid number starts there. A digit right after a leading `0` ends the number; the
/// caller then refuses that digit as unexpected.
pub(super) fn number_len(b: &[u8], start: usize) -> Option<usize> {
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let mut i = start;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while digit(i) {
                i += 1;
            }
        }
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digit(i) {
            return None;
        }
        while digit(i) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digit(i) {
            return None;
        }
        while digit(i) {
            i += 1;
        }
    }
    Some(i - start)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Containers open around the current position.
    depth: usize,
}

impl Parser<'_> {
    #[cold]
    #[inline(never)]
    fn err(&self, message: &'static str) -> Error {
        Error {
            message,
            offset: self.pos,
        }
    }

    /// The error for the byte at `pos`: the end of input, or `message`.
    #[cold]
    fn unexpected(&self, message: &'static str) -> Error {
        if self.pos >= self.bytes.len() {
            self.err("unexpected end of input")
        } else {
            self.err(message)
        }
    }

    fn rest(&self) -> &[u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// A value starting at `pos` (whitespace already skipped).
    fn value(&mut self) -> Result<Value, Error> {
        match self.peek() {
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'"') => {
                self.pos += 1;
                self.string().map(Value::String)
            }
            Some(b'[') => self.array(),
            Some(b'{') => self.object(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected("expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Result<Value, Error> {
        if self.rest().starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.pos;
        let len = number_len(self.bytes, start).ok_or_else(|| self.err("invalid number"))?;
        self.pos += len;
        let text = self.text.get(start..self.pos).unwrap_or_default();
        Ok(Value::Number(Number(text.to_owned())))
    }

    /// Opens a container: one level deeper, at most [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), Error> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.depth += 1;
        self.pos += 1;
        self.skip_ws();
        Ok(())
    }

    /// After an element: `true` on `,` (another follows), `false` on `close`.
    fn next_or_close(&mut self, close: u8, message: &'static str) -> Result<bool, Error> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.skip_ws();
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                self.depth -= 1;
                Ok(false)
            }
            _ => Err(self.unexpected(message)),
        }
    }

    fn array(&mut self) -> Result<Value, Error> {
        self.enter()?;
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            if !self.next_or_close(b']', "expected `,` or `]`")? {
                return Ok(Value::Array(items));
            }
        }
    }

    fn object(&mut self) -> Result<Value, Error> {
        self.enter()?;
        let mut members = Vec::new();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Object(members));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.unexpected("expected a string key"));
            }
            self.pos += 1;
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.unexpected("expected `:`"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value()?;
            members.push((key, value));
            if !self.next_or_close(b'}', "expected `,` or `}`")? {
                return Ok(Value::Object(members));
            }
        }
    }

    /// The rest of a string whose opening quote is consumed.
    fn string(&mut self) -> Result<String, Error> {
        let mut out = String::new();
        let mut start = self.pos;
        loop {
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.push_from(&mut out, start);
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.push_from(&mut out, start);
                    self.pos += 1;
                    self.escape(&mut out)?;
                    start = self.pos;
                }
                Some(0..=0x1f) => return Err(self.err("control character in string")),
                Some(_) => self.pos += 1,
            }
        }
    }

    /// Appends the text from `start` to `pos` (both at ASCII bytes, so at character
    /// boundaries).
    fn push_from(&self, out: &mut String, start: usize) {
        out.push_str(self.text.get(start..self.pos).unwrap_or_default());
    }

    /// One escape after its backslash.
    fn escape(&mut self, out: &mut String) -> Result<(), Error> {
        let c = match self.peek() {
            None => return Err(self.err("unterminated string")),
            Some(c) => c,
        };
        self.pos += 1;
        out.push(match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => {
                self.pos -= 1;
                return Err(self.err("invalid escape"));
            }
        });
        Ok(())
    }

    /// The character of a `\u` escape (its `\u` consumed), joining a surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, Error> {
        let lone = "lone surrogate in \\u escape";
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.rest().starts_with(b"\\u") {
                    return Err(self.err(lone));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.err(lone));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.err(lone)),
            _ => first,
        };
        char::from_u32(code).ok_or_else(|| self.err(lone))
    }

    /// Four hex digits (either case).
    fn hex4(&mut self) -> Result<u32, Error> {
        let mut n = 0;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(self.unexpected("invalid \\u escape")),
            };
            n = n * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(n)
    }
}
