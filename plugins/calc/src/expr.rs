//! `evaluate`: a small arithmetic expression language.
//!
//! Grammar (lowest precedence first):
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/' | '%') unary)*
//! unary   := ('-' | '+') unary | power
//! power   := primary (('^' | '**') unary)?      right-associative; -2^2 = -4, 2^-1 = 0.5
//! primary := number | constant | function '(' expr (',' expr)* ')' | '(' expr ')'
//! ```
//!
//! The parser evaluates as it goes, so every error carries the position of the
//! token that caused it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest expression accepted, in bytes.
const MAX_LEN: usize = 10_000;
/// Deepest nesting of parentheses / unary operators / powers. Guests have a
/// small stack, so recursion is bounded.
const MAX_DEPTH: usize = 64;

/// Evaluates an arithmetic expression. Operators: `+ - * / %` (remainder),
/// `^` or `**` (power, right-associative), unary minus, parentheses.
/// Functions: `sqrt abs ln log10 log2 exp sin cos tan asin acos atan`
/// (radians), `min(a, b, ...)`, `max(a, b, ...)`, `round(x)` or
/// `round(x, digits)`, `floor`, `ceil`. Constants: `pi`, `e`. Numbers may use
/// exponents (`1.5e3`) and `_` separators (`1_000`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluateArgs {
    /// The expression, e.g. `2 * (3 + 4)^2 / sqrt(16)`.
    pub expression: String,
}

/// The value of an expression.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Evaluation {
    /// The expression as given.
    pub expression: String,
    /// The exact floating-point result.
    pub result: f64,
    /// The result rounded to 12 significant digits for display (`0.1 + 0.2`
    /// shows as `0.3`).
    pub formatted: String,
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    /// 1-based character column of the offending token.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: {}", self.column, self.message)
    }
}

/// Evaluates `expression`.
pub fn evaluate(expression: &str) -> Result<Evaluation, ExprError> {
    let result = eval(expression)?;
    Ok(Evaluation {
        expression: expression.to_owned(),
        result,
        formatted: format_number(result),
    })
}

/// Evaluates `expression` to a finite number.
pub fn eval(expression: &str) -> Result<f64, ExprError> {
    if expression.len() > MAX_LEN {
        return Err(ExprError {
            column: 1,
            message: format!("expression is longer than {MAX_LEN} bytes"),
        });
    }
    let tokens = tokenize(expression)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
        end_column: expression.chars().count() + 1,
    };
    if parser.tokens.is_empty() {
        return Err(ExprError {
            column: 1,
            message: "the expression is empty".into(),
        });
    }
    let value = parser.expr()?;
    if let Some(tok) = parser.peek() {
        let msg = match tok.kind {
            Kind::RParen => "unmatched ')'".to_owned(),
            Kind::Num(_) | Kind::Ident(_) | Kind::LParen => format!(
                "expected an operator before {}; write `*` for multiplication",
                tok.kind
            ),
            _ => format!("unexpected {}", tok.kind),
        };
        return Err(parser.error_at(parser.pos, msg));
    }
    Ok(value)
}

/// Formats `x` with 12 significant digits, without float noise.
pub fn format_number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let rounded: f64 = format!("{x:.11e}").parse().unwrap_or(x);
    let abs = rounded.abs();
    if (1e-6..1e15).contains(&abs) {
        format!("{rounded}")
    } else {
        format!("{rounded:e}")
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Num(f64),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    LParen,
    RParen,
    Comma,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Num(n) => write!(f, "number {n}"),
            Kind::Ident(name) => write!(f, "`{name}`"),
            Kind::Plus => f.write_str("'+'"),
            Kind::Minus => f.write_str("'-'"),
            Kind::Star => f.write_str("'*'"),
            Kind::Slash => f.write_str("'/'"),
            Kind::Percent => f.write_str("'%'"),
            Kind::Caret => f.write_str("'^'"),
            Kind::LParen => f.write_str("'('"),
            Kind::RParen => f.write_str("')'"),
            Kind::Comma => f.write_str("','"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    /// 1-based character column.
    column: usize,
}

fn tokenize(src: &str) -> Result<Vec<Token>, ExprError> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let single = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '+' => Some(Kind::Plus),
            '-' | '\u{2212}' => Some(Kind::Minus),
            '*' if chars.get(i + 1) == Some(&'*') => {
                i += 1;
                Some(Kind::Caret)
            }
            '*' | '\u{00d7}' => Some(Kind::Star),
            '/' | '\u{00f7}' => Some(Kind::Slash),
            '%' => Some(Kind::Percent),
            '^' => Some(Kind::Caret),
            '(' => Some(Kind::LParen),
            ')' => Some(Kind::RParen),
            ',' => Some(Kind::Comma),
            _ => None,
        };
        if let Some(kind) = single {
            tokens.push(Token { kind, column });
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            // An exponent: e or E, an optional sign, then digits.
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            let text: String = chars[start..i].iter().filter(|&&c| c != '_').collect();
            let value: f64 = text.parse().map_err(|_| ExprError {
                column,
                message: format!(
                    "`{}` is not a valid number",
                    chars[start..i].iter().collect::<String>()
                ),
            })?;
            tokens.push(Token {
                kind: Kind::Num(value),
                column,
            });
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            tokens.push(Token {
                kind: Kind::Ident(name),
                column,
            });
            continue;
        }
        return Err(ExprError {
            column,
            message: format!("unexpected character '{c}'"),
        });
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    end_column: usize,
}

const FUNCTIONS: &str = "sqrt, abs, ln, log10, log2, exp, sin, cos, tan, asin, acos, atan, min, max, round, floor, ceil";

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_kind(&self) -> Option<&Kind> {
        self.peek().map(|t| &t.kind)
    }

    fn column_of(&self, pos: usize) -> usize {
        self.tokens.get(pos).map_or(self.end_column, |t| t.column)
    }

    fn error_at(&self, pos: usize, message: impl Into<String>) -> ExprError {
        ExprError {
            column: self.column_of(pos),
            message: message.into(),
        }
    }

    fn describe_current(&self) -> String {
        self.peek().map_or_else(
            || "the end of the expression".to_owned(),
            |t| t.kind.to_string(),
        )
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_at(
                self.pos,
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    /// Checks that an operation produced a finite number.
    fn finite(&self, value: f64, op_pos: usize, what: &str) -> Result<f64, ExprError> {
        if value.is_finite() {
            Ok(value)
        } else if value.is_nan() {
            Err(self.error_at(op_pos, format!("{what} is undefined (not a number)")))
        } else {
            Err(self.error_at(op_pos, format!("{what} overflows (the result is infinite)")))
        }
    }

    fn expr(&mut self) -> Result<f64, ExprError> {
        let mut value = self.term()?;
        while let Some(kind @ (Kind::Plus | Kind::Minus)) = self.peek_kind().cloned() {
            let op = self.pos;
            self.pos += 1;
            let rhs = self.term()?;
            value = if kind == Kind::Plus {
                self.finite(value + rhs, op, "the addition")?
            } else {
                self.finite(value - rhs, op, "the subtraction")?
            };
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, ExprError> {
        let mut value = self.unary()?;
        while let Some(kind @ (Kind::Star | Kind::Slash | Kind::Percent)) =
            self.peek_kind().cloned()
        {
            let op = self.pos;
            self.pos += 1;
            let rhs = self.unary()?;
            value = match kind {
                Kind::Star => self.finite(value * rhs, op, "the multiplication")?,
                Kind::Slash if rhs == 0.0 => return Err(self.error_at(op, "division by zero")),
                Kind::Slash => self.finite(value / rhs, op, "the division")?,
                _ if rhs == 0.0 => return Err(self.error_at(op, "remainder (%) by zero")),
                _ => self.finite(value % rhs, op, "the remainder")?,
            };
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<f64, ExprError> {
        match self.peek_kind() {
            Some(Kind::Minus) => {
                self.enter()?;
                self.pos += 1;
                let value = -self.unary()?;
                self.depth -= 1;
                Ok(value)
            }
            Some(Kind::Plus) => {
                self.enter()?;
                self.pos += 1;
                let value = self.unary()?;
                self.depth -= 1;
                Ok(value)
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, ExprError> {
        let base = self.primary()?;
        if self.peek_kind() != Some(&Kind::Caret) {
            return Ok(base);
        }
        let op = self.pos;
        self.pos += 1;
        self.enter()?;
        // The exponent is a unary: right-associative, and 2^-1 works.
        let exponent = self.unary()?;
        self.depth -= 1;
        if base == 0.0 && exponent < 0.0 {
            return Err(self.error_at(op, "zero raised to a negative power (division by zero)"));
        }
        if base < 0.0 && exponent.fract() != 0.0 {
            return Err(self.error_at(
                op,
                format!("a negative number raised to the non-integer power {exponent} is not a real number"),
            ));
        }
        self.finite(base.powf(exponent), op, "the power")
    }

    fn primary(&mut self) -> Result<f64, ExprError> {
        let at = self.pos;
        let Some(token) = self.peek().cloned() else {
            return Err(self.error_at(at, "expected a number, but the expression ends here"));
        };
        match token.kind {
            Kind::Num(n) => {
                self.pos += 1;
                Ok(n)
            }
            Kind::LParen => {
                self.enter()?;
                self.pos += 1;
                let value = self.expr()?;
                self.expect_rparen(at)?;
                self.depth -= 1;
                Ok(value)
            }
            Kind::Ident(name) => {
                self.pos += 1;
                if self.peek_kind() == Some(&Kind::LParen) {
                    self.call(&name, at)
                } else {
                    self.constant(&name, at)
                }
            }
            other => Err(self.error_at(at, format!("expected a number, but found {other}"))),
        }
    }

    fn expect_rparen(&mut self, open: usize) -> Result<(), ExprError> {
        if self.peek_kind() == Some(&Kind::RParen) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error_at(
                self.pos,
                format!(
                    "expected ')' to close the '(' at column {}, but found {}",
                    self.column_of(open),
                    self.describe_current()
                ),
            ))
        }
    }

    fn constant(&self, name: &str, at: usize) -> Result<f64, ExprError> {
        match name.to_ascii_lowercase().as_str() {
            "pi" | "π" => Ok(std::f64::consts::PI),
            "e" => Ok(std::f64::consts::E),
            "tau" => Ok(std::f64::consts::TAU),
            lower if FUNCTIONS.split(", ").any(|f| f == lower) => Err(self.error_at(
                at,
                format!("function `{name}` needs parentheses, e.g. {name}(2)"),
            )),
            _ => Err(self.error_at(
                at,
                format!(
                    "unknown name `{name}`; constants are pi, e, tau; functions are {FUNCTIONS}"
                ),
            )),
        }
    }

    fn call(&mut self, name: &str, at: usize) -> Result<f64, ExprError> {
        let open = self.pos;
        self.enter()?;
        self.pos += 1; // '('
        let mut args = Vec::new();
        if self.peek_kind() != Some(&Kind::RParen) {
            loop {
                args.push(self.expr()?);
                if self.peek_kind() == Some(&Kind::Comma) {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }
        self.expect_rparen(open)?;
        self.depth -= 1;
        let lower = name.to_ascii_lowercase();
        let arity = |n: usize| -> Result<(), ExprError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(self.error_at(
                    at,
                    format!(
                        "{name}() takes {n} argument(s), but {} were given",
                        args.len()
                    ),
                ))
            }
        };
        let domain = |ok: bool, what: &str| -> Result<(), ExprError> {
            if ok {
                Ok(())
            } else {
                Err(self.error_at(at, format!("{name}() {what}")))
            }
        };
        let x = args.first().copied().unwrap_or(f64::NAN);
        let value = match lower.as_str() {
            "sqrt" => {
                arity(1)?;
                domain(x >= 0.0, "is not defined for negative numbers")?;
                x.sqrt()
            }
            "abs" => {
                arity(1)?;
                x.abs()
            }
            "ln" | "log10" | "log2" => {
                arity(1)?;
                domain(x > 0.0, "is only defined for numbers greater than 0")?;
                match lower.as_str() {
                    "ln" => x.ln(),
                    "log10" => x.log10(),
                    _ => x.log2(),
                }
            }
            "exp" => {
                arity(1)?;
                x.exp()
            }
            "sin" => {
                arity(1)?;
                x.sin()
            }
            "cos" => {
                arity(1)?;
                x.cos()
            }
            "tan" => {
                arity(1)?;
                x.tan()
            }
            "asin" | "acos" => {
                arity(1)?;
                domain((-1.0..=1.0).contains(&x), "is only defined from -1 to 1")?;
                if lower == "asin" { x.asin() } else { x.acos() }
            }
            "atan" => {
                arity(1)?;
                x.atan()
            }
            "floor" => {
                arity(1)?;
                x.floor()
            }
            "ceil" => {
                arity(1)?;
                x.ceil()
            }
            "round" => match args.as_slice() {
                [x] => x.round(),
                [x, digits] => {
                    domain(
                        digits.fract() == 0.0 && (-15.0..=15.0).contains(digits),
                        "takes a whole number of digits from -15 to 15 as its second argument",
                    )?;
                    let factor = 10f64.powi(*digits as i32);
                    (x * factor).round() / factor
                }
                _ => {
                    return Err(self.error_at(
                        at,
                        format!(
                            "round() takes 1 or 2 arguments, but {} were given",
                            args.len()
                        ),
                    ));
                }
            },
            "min" | "max" => {
                if args.is_empty() {
                    return Err(self.error_at(at, format!("{name}() needs at least one argument")));
                }
                let pick = if lower == "min" { f64::min } else { f64::max };
                args.iter().copied().fold(x, pick)
            }
            _ => {
                return Err(self.error_at(
                    at,
                    format!("unknown function `{name}`; functions are {FUNCTIONS}"),
                ));
            }
        };
        self.finite(value, at, &format!("{name}()"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> f64 {
        eval(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> ExprError {
        eval(s).expect_err(s)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn precedence() {
        assert_eq!(ev("1 + 2 * 3"), 7.0);
        assert_eq!(ev("(1 + 2) * 3"), 9.0);
        assert_eq!(ev("10 - 4 - 3"), 3.0);
        assert_eq!(ev("100 / 10 / 5"), 2.0);
        assert_eq!(ev("7 % 4 * 2"), 6.0);
        assert_eq!(ev("2 * 3 ^ 2"), 18.0);
        assert_eq!(ev("1 + 2 * 3 ^ 2 - 4 / 2"), 17.0);
    }

    #[test]
    fn power_is_right_associative_and_binds_tighter_than_unary_minus() {
        assert_eq!(ev("2 ^ 3 ^ 2"), 512.0);
        assert_eq!(ev("2 ** 3 ** 2"), 512.0);
        assert_eq!(ev("-2 ^ 2"), -4.0);
        assert_eq!(ev("(-2) ^ 2"), 4.0);
        assert_eq!(ev("2 ^ -1"), 0.5);
        assert_eq!(ev("--3"), 3.0);
        assert_eq!(ev("-(2 + 3)"), -5.0);
        assert_eq!(ev("4 ^ 0.5"), 2.0);
    }

    #[test]
    fn numbers() {
        assert_eq!(ev("1.5e3"), 1500.0);
        assert_eq!(ev("2E-2"), 0.02);
        assert_eq!(ev(".5 + 1_000"), 1000.5);
        // `e` after a number without digits is the constant, not an exponent.
        assert!(eval("2e").is_err());
    }

    #[test]
    fn functions_and_constants() {
        assert!(close(ev("sqrt(16) + abs(-3)"), 7.0));
        assert!(close(ev("ln(e)"), 1.0));
        assert!(close(ev("log10(1000)"), 3.0));
        assert!(close(ev("sin(pi / 2) + cos(0) + tan(0)"), 2.0));
        assert_eq!(ev("min(3, 1, 2)"), 1.0);
        assert_eq!(ev("max(3, 1, 2)"), 3.0);
        assert_eq!(ev("round(2.5) + floor(1.9) + ceil(1.1)"), 6.0);
        assert_eq!(ev("round(1.23456, 3)"), 1.235);
        assert_eq!(ev("round(1234, -2)"), 1200.0);
        assert!(close(ev("PI"), std::f64::consts::PI));
        assert!(close(ev("exp(ln(5))"), 5.0));
    }

    #[test]
    fn errors_carry_positions() {
        let e = err("1 / 0");
        assert_eq!(e.column, 3);
        assert_eq!(e.message, "division by zero");
        assert_eq!(err("5 % (2 - 2)").message, "remainder (%) by zero");
        let e = err("2 + # 3");
        assert_eq!(
            (e.column, e.message.as_str()),
            (5, "unexpected character '#'")
        );
        let e = err("(1 + 2");
        assert_eq!(e.column, 7);
        assert!(
            e.message.contains("close the '(' at column 1"),
            "{}",
            e.message
        );
        let e = err("1 + 2)");
        assert_eq!((e.column, e.message.as_str()), (6, "unmatched ')'"));
        let e = err("1 +");
        assert_eq!(e.column, 4);
        assert!(e.message.contains("ends here"));
        let e = err("2 (3)");
        assert!(e.message.contains("write `*`"), "{}", e.message);
        assert!(err("").message.contains("empty"));
        assert!(err("   ").message.contains("empty"));
    }

    #[test]
    fn errors_for_names_and_domains() {
        let e = err("foo(2)");
        assert!(
            e.message.contains("unknown function `foo`"),
            "{}",
            e.message
        );
        assert!(err("x + 1").message.contains("unknown name `x`"));
        assert!(err("sqrt 4").message.contains("needs parentheses"));
        assert!(err("sqrt(-1)").message.contains("negative"));
        assert!(err("ln(0)").message.contains("greater than 0"));
        assert!(err("sqrt(1, 2)").message.contains("takes 1 argument"));
        assert!(err("min()").message.contains("at least one"));
        assert!(err("0 ^ -1").message.contains("division by zero"));
        assert!(err("(-8) ^ (1/3)").message.contains("not a real number"));
        assert!(err("10 ^ 400").message.contains("overflows"));
        assert!(err("1.2.3").message.contains("not a valid number"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(4000), ")".repeat(4000));
        let e = err(&deep);
        assert!(e.message.contains("nests deeper"), "{}", e.message);
        assert!(err(&"-".repeat(5000)).message.contains("nests deeper"));
        let ok = format!("{}1{}", "(".repeat(50), ")".repeat(50));
        assert_eq!(ev(&ok), 1.0);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_number(0.1 + 0.2), "0.3");
        assert_eq!(format_number(7.0), "7");
        assert_eq!(format_number(-2.5), "-2.5");
        assert_eq!(format_number(1e300), "1e300");
        assert_eq!(format_number(1.5e-9), "1.5e-9");
        assert_eq!(format_number(0.0), "0");
        assert_eq!(evaluate("1/3").unwrap().formatted, "0.333333333333");
    }
}
