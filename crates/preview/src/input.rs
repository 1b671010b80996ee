//! The browser's input primitives the actions are made of: where an element is (scrolled into
//! view, the centre of its first box), real mouse and key events (`Input.dispatch*`, so that the
//! page sees what a user's hand would make: pointer, mouse and click events, keydown/keypress/
//! input/keyup, default actions such as a form's submit on Enter), and calls of hands' own small
//! functions on an element (`Runtime.callFunctionOn`; never the model's JavaScript).

use serde_json::{Value, json};

use crate::cdp::Cdp;

/// A page and the connection to it.
pub struct Page<'a> {
    /// The connection.
    pub cdp: &'a Cdp,
    /// The page's flat session.
    pub session: &'a str,
}

impl Page<'_> {
    /// Call `method` in the page; a protocol error becomes its message.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        self.cdp.call(method, params, Some(self.session)).await.map_err(|e| e.to_string())
    }

    /// Scroll element `node` into view and return the centre of its first box, in CSS pixels.
    pub async fn centre(&self, node: u64, name: &str) -> Result<(f64, f64), String> {
        let _ = self.call("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": node})).await;
        let quads = self.call("DOM.getContentQuads", json!({"backendNodeId": node})).await?;
        let quad = quads["quads"].as_array().and_then(|q| q.first()).and_then(Value::as_array);
        let Some(quad) = quad.filter(|q| q.len() == 8) else {
            return Err(format!(
                "{name} has no box on the page (it is hidden or has no size): nothing to act on"
            ));
        };
        let n = |i: usize| quad[i].as_f64().unwrap_or(0.0);
        Ok(((n(0) + n(2) + n(4) + n(6)) / 4.0, (n(1) + n(3) + n(5) + n(7)) / 4.0))
    }

    /// Move the mouse to (x, y).
    pub async fn hover(&self, x: f64, y: f64) -> Result<(), String> {
        self.call("Input.dispatchMouseEvent", json!({"type": "mouseMoved", "x": x, "y": y}))
            .await
            .map(drop)
    }

    /// Click at (x, y) `count` times (2: a double click).
    pub async fn click(&self, x: f64, y: f64, count: u32) -> Result<(), String> {
        self.hover(x, y).await?;
        for n in 1..=count {
            for kind in ["mousePressed", "mouseReleased"] {
                self.call(
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": n}),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Turn the mouse wheel by `dy` pixels at (x, y).
    pub async fn wheel(&self, x: f64, y: f64, dy: f64) -> Result<(), String> {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy}),
        )
        .await
        .map(drop)
    }

    /// Press a key, with modifiers: `Enter`, `Tab`, `Control+a`, `Shift+ArrowDown`.
    pub async fn press(&self, spec: &str) -> Result<(), String> {
        let key = Key::parse(spec)?;
        let mut down = json!({
            "type": if key.text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": key.key, "code": key.code,
            "windowsVirtualKeyCode": key.key_code, "nativeVirtualKeyCode": key.key_code,
            "modifiers": key.modifiers,
        });
        if let Some(text) = &key.text {
            down["text"] = json!(text);
            down["unmodifiedText"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down).await?;
        let up = json!({
            "type": "keyUp", "key": key.key, "code": key.code,
            "windowsVirtualKeyCode": key.key_code, "nativeVirtualKeyCode": key.key_code,
            "modifiers": key.modifiers,
        });
        self.call("Input.dispatchKeyEvent", up).await.map(drop)
    }

    /// Type `text` into the focused element (as an input method commits it: one `input` event).
    pub async fn insert(&self, text: &str) -> Result<(), String> {
        self.call("Input.insertText", json!({"text": text})).await.map(drop)
    }

    /// Focus element `node`.
    pub async fn focus(&self, node: u64) -> Result<(), String> {
        self.call("DOM.focus", json!({"backendNodeId": node})).await.map(drop)
    }

    /// Call hands' `function` (JavaScript source) with `this` = element `node` and `args`; its
    /// return value, or the message of what it threw.
    pub async fn on_element(
        &self,
        node: u64,
        function: &str,
        args: &[Value],
    ) -> Result<Value, String> {
        let resolved = self.call("DOM.resolveNode", json!({"backendNodeId": node})).await?;
        let Some(object) = resolved["object"]["objectId"].as_str() else {
            return Err("the element is gone from the page".to_owned());
        };
        let arguments: Vec<Value> = args.iter().map(|v| json!({"value": v})).collect();
        let result = self
            .call(
                "Runtime.callFunctionOn",
                json!({"objectId": object, "functionDeclaration": function,
                       "arguments": arguments, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        let _ = self.call("Runtime.releaseObject", json!({"objectId": object})).await;
        if let Some(details) = result.get("exceptionDetails") {
            let message = details["exception"]["description"]
                .as_str()
                .or(details["text"].as_str())
                .unwrap_or("it threw");
            return Err(message
                .lines()
                .next()
                .unwrap_or(message)
                .trim_start_matches("Error: ")
                .to_owned());
        }
        Ok(result["result"]["value"].clone())
    }

    /// Evaluate hands' `expression` in the page; its value.
    pub async fn evaluate(&self, expression: &str) -> Result<Value, String> {
        let result = self
            .call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}))
            .await?;
        if let Some(details) = result.get("exceptionDetails") {
            let message = details["exception"]["description"].as_str().unwrap_or("it threw");
            return Err(message.lines().next().unwrap_or(message).to_owned());
        }
        Ok(result["result"]["value"].clone())
    }
}

/// A key as `Input.dispatchKeyEvent` wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// `Enter`, `a`.
    pub key: String,
    /// `Enter`, `KeyA`.
    pub code: String,
    /// The Windows virtual key code.
    pub key_code: u32,
    /// What the key types, when anything (and no Control/Meta/Alt is held).
    pub text: Option<String>,
    /// Alt 1, Control 2, Meta 4, Shift 8.
    pub modifiers: u32,
}

/// Named keys: name, code, key code, text.
const NAMED: &[(&str, &str, u32, Option<&str>)] = &[
    ("Enter", "Enter", 13, Some("\r")),
    ("Tab", "Tab", 9, None),
    ("Escape", "Escape", 27, None),
    ("Backspace", "Backspace", 8, None),
    ("Delete", "Delete", 46, None),
    ("ArrowUp", "ArrowUp", 38, None),
    ("ArrowDown", "ArrowDown", 40, None),
    ("ArrowLeft", "ArrowLeft", 37, None),
    ("ArrowRight", "ArrowRight", 39, None),
    ("Home", "Home", 36, None),
    ("End", "End", 35, None),
    ("PageUp", "PageUp", 33, None),
    ("PageDown", "PageDown", 34, None),
    ("Space", "Space", 32, Some(" ")),
];

impl Key {
    /// `Control+Shift+a`, `Enter`, `Space`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let parts: Vec<&str> = spec.split('+').map(str::trim).collect();
        let (name, held) = match parts.split_last() {
            Some((name, held)) if !name.is_empty() => (*name, held),
            _ => {
                return Err(format!("{spec:?} is not a key: give e.g. \"Enter\" or \"Control+a\""));
            }
        };
        let mut modifiers = 0;
        for m in held {
            modifiers |= match m.to_ascii_lowercase().as_str() {
                "alt" => 1,
                "control" | "ctrl" => 2,
                "meta" | "cmd" | "command" => 4,
                "shift" => 8,
                other => {
                    return Err(format!(
                        "{other:?} in {spec:?} is not a modifier (Alt, Control, Meta, Shift)"
                    ));
                }
            };
        }
        let typing = modifiers & 0b111 == 0;
        if let Some((key, code, key_code, text)) =
            NAMED.iter().find(|(n, ..)| n.eq_ignore_ascii_case(name))
        {
            let key = if *key == "Space" { " " } else { key };
            return Ok(Self {
                key: key.to_string(),
                code: code.to_string(),
                key_code: *key_code,
                text: text.filter(|_| typing).map(str::to_owned),
                modifiers,
            });
        }
        let mut chars = name.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => {
                let upper = c.to_ascii_uppercase();
                let code = if c.is_ascii_alphabetic() {
                    format!("Key{upper}")
                } else if c.is_ascii_digit() {
                    format!("Digit{c}")
                } else {
                    String::new()
                };
                let typed = if modifiers & 8 != 0 { upper } else { c };
                Ok(Self {
                    key: typed.to_string(),
                    code,
                    key_code: upper as u32,
                    text: typing.then(|| typed.to_string()),
                    modifiers,
                })
            }
            _ => Err(format!(
                "{name:?} is not a key name: use one character or one of {}",
                NAMED.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_parsed_with_their_modifiers() {
        let enter = Key::parse("Enter").unwrap();
        assert_eq!((enter.key_code, enter.text.as_deref()), (13, Some("\r")));
        let select_all = Key::parse("Control+a").unwrap();
        assert_eq!(
            (select_all.code.as_str(), select_all.modifiers, select_all.text),
            ("KeyA", 2, None)
        );
        assert_eq!(Key::parse("Shift+b").unwrap().text.as_deref(), Some("B"));
        assert!(Key::parse("Hyper+x").unwrap_err().contains("not a modifier"));
        assert!(Key::parse("Enterr").unwrap_err().contains("not a key name"));
    }
}
