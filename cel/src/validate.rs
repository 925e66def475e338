//! The AST validators kube's environment runs after type checking (kube 1.29's): list and map
//! literals must be homogeneous (outside `format`), regular expression, duration and timestamp
//! literals must be valid, and constant `format` strings must parse. cel-go runs them only on
//! an expression that checked without issues.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::check::Checked;
use crate::functions;
use crate::stdlib::{self, strings};

/// The validators' findings: (node id, message).
pub fn validate(expr: &IdedExpr, checked: &Checked) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    homogeneous(expr, checked, false, &mut out);
    literals(expr, checked, &mut out);
    out
}

/// cel-go's `ValidateHomogeneousAggregateLiterals`, literals inside `format` calls exempt.
fn homogeneous(e: &IdedExpr, checked: &Checked, exempt: bool, out: &mut Vec<(u64, String)>) {
    let mismatch = |id: u64, expected: &crate::types::Type, actual: &crate::types::Type| {
        (id, format!("expected type '{expected}' but found '{actual}'"))
    };
    match &e.expr {
        Expr::List(l) => {
            if !exempt {
                let mut first: Option<crate::types::Type> = None;
                for (i, x) in l.elements.iter().enumerate() {
                    let mut t = checked.type_of(x.id);
                    if l.optional_indices.contains(&i) {
                        t = t.unwrap_optional().0;
                    }
                    match &first {
                        None => first = Some(t),
                        Some(f) if !f.is_equivalent(&t) => {
                            out.push(mismatch(x.id, f, &t));
                            break;
                        }
                        _ => {}
                    }
                }
            }
            l.elements.iter().for_each(|x| homogeneous(x, checked, exempt, out));
        }
        Expr::Map(m) => {
            let mut first: Option<(crate::types::Type, crate::types::Type)> = None;
            for entry in &m.entries {
                let EntryExpr::MapEntry(me) = &entry.expr else { continue };
                if !exempt {
                    let kt = checked.type_of(me.key.id);
                    let mut vt = checked.type_of(me.value.id);
                    if me.optional {
                        vt = vt.unwrap_optional().0;
                    }
                    match &first {
                        None => first = Some((kt, vt)),
                        Some((fk, fv)) => {
                            if !fk.is_equivalent(&kt) {
                                out.push(mismatch(me.key.id, fk, &kt));
                            }
                            if !fv.is_equivalent(&vt) {
                                out.push(mismatch(me.value.id, fv, &vt));
                            }
                        }
                    }
                }
                homogeneous(&me.key, checked, exempt, out);
                homogeneous(&me.value, checked, exempt, out);
            }
        }
        Expr::Call(c) => {
            let exempt = exempt || c.func_name == "format";
            if let Some(t) = &c.target {
                homogeneous(t, checked, exempt, out);
            }
            c.args.iter().for_each(|a| homogeneous(a, checked, exempt, out));
        }
        Expr::Select(s) => homogeneous(&s.operand, checked, exempt, out),
        Expr::Comprehension(c) => {
            for part in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                homogeneous(part, checked, exempt, out);
            }
        }
        Expr::Struct(s) => s.entries.iter().for_each(|entry| {
            if let EntryExpr::StructField(f) = &entry.expr {
                homogeneous(&f.value, checked, exempt, out);
            }
        }),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Regex, duration and timestamp literals, and constant format strings.
fn literals(e: &IdedExpr, checked: &Checked, out: &mut Vec<(u64, String)>) {
    crate::parse::walk(e, &mut |node| {
        let Expr::Call(c) = &node.expr else { return };
        let first_literal = c.args.first().and_then(|a| match &a.expr {
            Expr::Literal(l) => Some((a.id, l)),
            _ => None,
        });
        match (c.func_name.as_str(), first_literal) {
            ("matches", Some((id, LiteralValue::String(p)))) if stdlib::regex::compile(p.inner()).is_err() => {
                out.push((id, "invalid matches argument".into()));
            }
            (f @ ("duration" | "timestamp"), Some((id, lit))) if c.target.is_none() => {
                let v = crate::plan::literal(lit);
                let overloads = checked.overloads(node.id);
                let overload = (overloads.len() == 1).then(|| overloads[0]);
                if functions::call(f, overload, &[v], None).is_err() {
                    out.push((id, format!("invalid {f} argument")));
                }
            }
            ("format", _) => format_string(node, c, checked, out),
            _ => {}
        }
    });
}

/// cel-go's string format validator: a constant format string with a list literal of
/// arguments must parse, and use every argument.
fn format_string(node: &IdedExpr, c: &cel::common::ast::CallExpr, checked: &Checked, out: &mut Vec<(u64, String)>) {
    if !checked.overloads(node.id).contains(&"string_format") {
        return;
    }
    let (Some(target), [arg]) = (&c.target, &c.args[..]) else { return };
    let (Expr::Literal(LiteralValue::String(f)), Expr::List(list)) = (&target.expr, &arg.expr) else { return };
    let f = f.inner();
    let bytes = f.as_bytes();
    let (mut i, mut used) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        if used >= list.elements.len() {
            out.push((node.id, format!("index {used} out of range")));
            return;
        }
        if i + 1 >= bytes.len() {
            out.push((node.id, "unexpected end of string".into()));
            return;
        }
        match strings::parse_clause(&f[i + 1..]) {
            Ok((read, _)) => i += 1 + read,
            Err(e) => {
                out.push((node.id, format!("could not parse formatting clause: {e}")));
                return;
            }
        }
        used += 1;
    }
    if list.elements.len() > used {
        out.push((
            node.id,
            format!("too many arguments supplied to string.format (expected {used}, got {})", list.elements.len()),
        ));
    }
}
