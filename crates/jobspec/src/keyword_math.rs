//! fio's "simple math" on reserved keywords: a value in which `$pagesize`, `$ncpus` or
//! `$mb_memory` was replaced and that holds `+ - * /` is computed as fio computes it, by
//! `bc` with its default scale 0 (whole numbers, division truncating), so
//! `size=5*1024*1024*$mb_memory/8` is five eighths of the memory in bytes.
//!
//! Written here rather than taken from a crate: the expression crates compute in floating
//! point (meval, fasteval), which loses bc's truncating division (`7/8*$mb_memory` is 0 in
//! bc), or carry a licence this project cannot take (evalexpr 12 and later).

/// The value computed, or `None` when `value` is not an arithmetic expression of whole
/// numbers (it is then left as written, as a name such as `/dev/$ncpus` should be).
pub fn evaluate(value: &str) -> Option<Result<i128, String>> {
    let tokens = tokenize(value)?;
    let mut p = Parser { tokens, at: 0 };
    match p.sum() {
        Ok(v) if p.at == p.tokens.len() => Some(Ok(v)),
        Ok(_) => None,
        Err(why) => Some(Err(why)),
    }
}

/// Whether fio would hand this value to bc: it holds an operator and no quote.
pub fn wants_math(value: &str) -> bool {
    value.contains(['+', '-', '*', '/']) && !value.contains('\'')
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(i128),
    Op(char),
    Open,
    Close,
}

fn tokenize(text: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' => {
                chars.next();
            }
            '0'..='9' => {
                let mut n: i128 = 0;
                while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                    n = n.checked_mul(10)?.checked_add(i128::from(d))?;
                    chars.next();
                }
                out.push(Token::Number(n));
            }
            '+' | '-' | '*' | '/' | '%' | '^' => {
                out.push(Token::Op(c));
                chars.next();
            }
            '(' => {
                out.push(Token::Open);
                chars.next();
            }
            ')' => {
                out.push(Token::Close);
                chars.next();
            }
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// bc's precedence, lowest first: `+ -`, `* / %`, `^` (right to left), unary minus.
struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.at).copied()
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut acc = self.product()?;
        while let Some(Token::Op(op @ ('+' | '-'))) = self.peek() {
            self.at += 1;
            let rhs = self.product()?;
            acc = if op == '+' {
                acc.checked_add(rhs)
            } else {
                acc.checked_sub(rhs)
            }
            .ok_or_else(too_large)?;
        }
        Ok(acc)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut acc = self.power()?;
        while let Some(Token::Op(op @ ('*' | '/' | '%'))) = self.peek() {
            self.at += 1;
            let rhs = self.power()?;
            if op != '*' && rhs == 0 {
                return Err("divides by zero".into());
            }
            acc = match op {
                '*' => acc.checked_mul(rhs).ok_or_else(too_large)?,
                '/' => acc / rhs,
                _ => acc % rhs,
            };
        }
        Ok(acc)
    }

    fn power(&mut self) -> Result<i128, String> {
        let base = self.unary()?;
        if let Some(Token::Op('^')) = self.peek() {
            self.at += 1;
            let exponent = self.power()?;
            return match u32::try_from(exponent) {
                Ok(e) => base.checked_pow(e).ok_or_else(too_large),
                // bc at scale 0: a negative power of a whole number truncates to 0 (or
                // stays 1 for 1).
                Err(_) if exponent < 0 => Ok(match base {
                    1 => 1,
                    -1 if exponent % 2 == 0 => 1,
                    -1 => -1,
                    _ => 0,
                }),
                Err(_) => Err(too_large()),
            };
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some(Token::Op('-')) => {
                self.at += 1;
                Ok(-self.unary()?)
            }
            Some(Token::Number(n)) => {
                self.at += 1;
                Ok(n)
            }
            Some(Token::Open) => {
                self.at += 1;
                let v = self.sum()?;
                if self.peek() != Some(Token::Close) {
                    return Err("has a '(' without its ')'".into());
                }
                self.at += 1;
                Ok(v)
            }
            _ => Err("is not a whole expression".into()),
        }
    }
}

fn too_large() -> String {
    "is too large to compute".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str) -> Option<Result<i128, String>> {
        evaluate(s)
    }

    #[test]
    fn computes_as_bc_does_at_scale_zero() {
        // page_fault.fio's five eighths of 24,105 MiB, in bytes.
        assert_eq!(eval("5*1024*1024*24105/8"), Some(Ok(15_797_452_800)));
        assert_eq!(eval("8*1024*4096"), Some(Ok(33_554_432)));
        assert_eq!(eval("7/8*24105"), Some(Ok(0)));
        assert_eq!(eval("2+3*4"), Some(Ok(14)));
        assert_eq!(eval("(2+3)*4"), Some(Ok(20)));
        assert_eq!(eval("10-4-3"), Some(Ok(3)));
        assert_eq!(eval("2^3^2"), Some(Ok(512)));
        assert_eq!(eval("-2^2"), Some(Ok(4)));
        assert_eq!(eval("17%5"), Some(Ok(2)));
        assert_eq!(eval("-7/2"), Some(Ok(-3)));
        assert_eq!(eval("2^-1"), Some(Ok(0)));
        assert_eq!(eval("-1^-3"), Some(Ok(-1)));
        assert_eq!(eval(" 4096 * 2 "), Some(Ok(8192)));
    }

    #[test]
    fn what_is_not_whole_arithmetic_is_left_alone_and_bad_arithmetic_is_an_error() {
        assert_eq!(eval("/dev/4"), None);
        assert_eq!(eval("*4"), Some(Err("is not a whole expression".into())));
        assert_eq!(eval("4k*2"), None);
        assert_eq!(eval("disk-4"), None);
        assert_eq!(eval("1.5*2"), None);
        assert_eq!(eval("4096 8"), None);
        assert_eq!(eval("8/0"), Some(Err("divides by zero".into())));
        assert_eq!(eval("(8*2"), Some(Err("has a '(' without its ')'".into())));
        assert_eq!(
            eval("99999999999999999999*99999999999999999999"),
            Some(Err("is too large to compute".into()))
        );
        assert!(wants_math("5*24105"));
        assert!(!wants_math("24105"));
        assert!(!wants_math("'a'-4"));
    }
}
