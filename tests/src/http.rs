//! One way for tests to send a request to the serving port and read what a client sees: the
//! status code, the body as JSON, the headers.

use awc::http::header::HeaderMap;
use serde_json::Value;

use crate::TestServer;

/// Who sends a request.
#[derive(Clone, Copy, Debug)]
pub enum Caller<'a> {
    /// The admin's client certificate (`system:masters`).
    Admin,
    /// No credentials at all.
    Anonymous,
    /// A bearer token and no client certificate.
    Bearer(&'a str),
}

/// A request being built; [`Request::send`] sends it.
#[must_use = "a request does nothing until it is sent"]
pub struct Request<'s> {
    server: &'s TestServer,
    caller: Caller<'s>,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

/// What came back.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status code.
    pub code: u16,
    /// The body as JSON; a body that is not JSON is a string, an empty one `null`.
    pub body: Value,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body as it came.
    pub bytes: Vec<u8>,
}

impl Answer {
    /// The header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// Every `Warning` header, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.headers.get_all("warning").map(|v| v.to_str().unwrap_or("").to_string()).collect()
    }
}

impl<'s> Request<'s> {
    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A JSON body (and `Content-Type: application/json` unless a content type was given).
    pub fn json(self, body: &Value) -> Self {
        self.body_with_type(serde_json::to_vec(body).expect("JSON encodes"), "application/json")
    }

    /// A JSON body when there is one.
    pub fn json_opt(self, body: Option<&Value>) -> Self {
        match body {
            Some(b) => self.json(b),
            None => self,
        }
    }

    /// A body of any bytes, sent with `content_type` unless a content type was given.
    pub fn body_with_type(mut self, body: Vec<u8>, content_type: &str) -> Self {
        if !self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
            self.headers.push(("Content-Type".into(), content_type.into()));
        }
        self.body = Some(body);
        self
    }

    /// Sends it (inside an actix runtime) and reads the whole answer; panics if no answer came.
    pub async fn send(self) -> Answer {
        let client = self.server.client(matches!(self.caller, Caller::Admin));
        let (method, path) = (self.method.as_str(), self.path.as_str());
        let mut req = client.request(method.parse().expect("an HTTP method"), self.server.url(path));
        if let Caller::Bearer(token) = self.caller {
            req = req.bearer_auth(token);
        }
        for (k, v) in &self.headers {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        let mut resp = match self.body {
            Some(b) => req.send_body(b).await,
            None => req.send().await,
        }
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let bytes = resp.body().limit(64 << 20).await.unwrap_or_else(|e| panic!("{method} {path}: body: {e}"));
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Answer { code: resp.status().as_u16(), body, headers: resp.headers().clone(), bytes: bytes.to_vec() }
    }
}

impl TestServer {
    /// A request of `method` to `path` on the serving port, from `caller`.
    pub fn request<'s>(&'s self, caller: Caller<'s>, method: &str, path: &str) -> Request<'s> {
        Request { server: self, caller, method: method.into(), path: path.into(), headers: Vec::new(), body: None }
    }

    /// `method path` as the admin, with an optional JSON body.
    pub async fn admin_call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        self.request(Caller::Admin, method, path).json_opt(body).send().await
    }
}
