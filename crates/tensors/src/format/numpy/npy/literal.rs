//! A strict parser for the Python literals `.npy` headers are written in (what
//! `ast.literal_eval` would read for them): single- or double-quoted strings with simple
//! escapes, decimal integers, `True`/`False`/`None`, tuples, lists and dicts, nested at most
//! 16 deep. Nothing is evaluated; anything else is a syntax error.

use super::NpyError;
use std::fmt;

/// The deepest nesting of the header's literal.
const MAX_DEPTH: usize = 16;

/// A parsed literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer.
    Int(i128),
    /// `True` / `False`.
    Bool(bool),
    /// `None`.
    None,
    /// A tuple.
    Tuple(Vec<Value>),
    /// A list.
    List(Vec<Value>),
    /// A dict, in order.
    Dict(Vec<(Value, Value)>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(f: &mut fmt::Formatter<'_>, items: &[Value]) -> fmt::Result {
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            Ok(())
        }
        match self {
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Value::None => f.write_str("None"),
            Value::Tuple(v) => {
                f.write_str("(")?;
                seq(f, v)?;
                f.write_str(if v.len() == 1 { ",)" } else { ")" })
            }
            Value::List(v) => {
                f.write_str("[")?;
                seq(f, v)?;
                f.write_str("]")
            }
            Value::Dict(kv) => {
                f.write_str("{")?;
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

struct P<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

/// Parses `text`: one literal, surrounded by whitespace only.
pub fn parse(text: &str) -> Result<Value, NpyError> {
    let mut p = P {
        s: text.as_bytes(),
        text,
        pos: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(p.err("trailing characters after the literal"));
    }
    Ok(v)
}

impl P<'_> {
    fn err(&self, why: &'static str) -> NpyError {
        NpyError::Syntax { at: self.pos, why }
    }

    fn ws(&mut self) {
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Value, NpyError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        match self.peek() {
            None => Err(self.err("unexpected end")),
            Some(b'{') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        return Ok(Value::Dict(items));
                    }
                    let k = self.value(depth + 1)?;
                    if self.peek() != Some(b':') {
                        return Err(self.err("expected ':'"));
                    }
                    self.pos += 1;
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {}
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(open @ (b'(' | b'[')) => {
                self.pos += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                let mut comma = false;
                loop {
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        // `(x)` is a parenthesised value, `(x,)` a tuple.
                        if open == b'(' && items.len() == 1 && !comma {
                            return Ok(items.remove(0));
                        }
                        return Ok(if open == b'(' {
                            Value::Tuple(items)
                        } else {
                            Value::List(items)
                        });
                    }
                    items.push(self.value(depth + 1)?);
                    comma = false;
                    match self.peek() {
                        Some(b',') => {
                            self.pos += 1;
                            comma = true;
                        }
                        Some(c) if c == close => {}
                        _ => return Err(self.err("expected ',' or a closing bracket")),
                    }
                }
            }
            Some(q @ (b'\'' | b'"')) => self.string(q),
            Some(c) if c == b'-' || c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self
                    .s
                    .get(self.pos)
                    .is_some_and(|c| c.is_ascii_alphanumeric())
                {
                    self.pos += 1;
                }
                match &self.text[start..self.pos] {
                    "True" => Ok(Value::Bool(true)),
                    "False" => Ok(Value::Bool(false)),
                    "None" => Ok(Value::None),
                    _ => {
                        self.pos = start;
                        Err(self.err("unknown name (only True, False, None)"))
                    }
                }
            }
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn int(&mut self) -> Result<Value, NpyError> {
        let start = self.pos;
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let digits = self.pos;
        while self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        if self.pos == digits {
            return Err(self.err("expected digits"));
        }
        if self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_')
        {
            return Err(self.err("only decimal integers"));
        }
        self.text[start..self.pos]
            .parse::<i128>()
            .map(Value::Int)
            .map_err(|_| NpyError::Syntax {
                at: start,
                why: "integer out of range",
            })
    }

    fn string(&mut self, quote: u8) -> Result<Value, NpyError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let Some(c) = rest.chars().next() else {
                return Err(self.err("unterminated string"));
            };
            self.pos += c.len_utf8();
            match c {
                '\n' => return Err(self.err("newline in a string")),
                '\\' => {
                    let e = self.s.get(self.pos).copied();
                    self.pos += 1;
                    out.push(match e {
                        Some(b'\\') => '\\',
                        Some(b'\'') => '\'',
                        Some(b'"') => '"',
                        Some(b'n') => '\n',
                        Some(b't') => '\t',
                        _ => return Err(self.err("unsupported escape")),
                    });
                }
                c if c as u32 == u32::from(quote) => return Ok(Value::Str(out)),
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_parse_strictly() {
        let v = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }  \n").unwrap();
        assert_eq!(
            v,
            Value::Dict(vec![
                (Value::Str("descr".into()), Value::Str("<f4".into())),
                (Value::Str("fortran_order".into()), Value::Bool(false)),
                (
                    Value::Str("shape".into()),
                    Value::Tuple(vec![Value::Int(3), Value::Int(4)])
                ),
            ])
        );
        assert_eq!(parse("(3,)").unwrap(), Value::Tuple(vec![Value::Int(3)]));
        assert_eq!(parse("(3)").unwrap(), Value::Int(3));
        assert_eq!(parse("()").unwrap(), Value::Tuple(vec![]));
        assert_eq!(
            parse("[('a', '<f4')]").unwrap().to_string(),
            "[(\"a\", \"<f4\")]"
        );
        for bad in [
            "{",
            "{'a' 1}",
            "(1 2)",
            "__import__('os')",
            "1.5",
            "0x10",
            "'abc",
            "{'a': 1} x",
            "1e5",
            "f'x'",
        ] {
            assert!(matches!(parse(bad), Err(NpyError::Syntax { .. })), "{bad}");
        }
        let deep = "(".repeat(100) + &")".repeat(100);
        assert!(matches!(parse(&deep), Err(NpyError::Syntax { .. })));
    }
}
