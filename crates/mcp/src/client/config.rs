//! `[mcp_servers.NAME]`: the MCP servers whose tools hands brings in — a child process
//! (`command`, `args`, `env`) or a Streamable HTTP endpoint (`url`, `headers`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::link::Endpoint;

/// `[mcp_servers]`: server name → how to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct McpServersConfig(pub BTreeMap<String, McpServerConfig>);

impl McpServersConfig {
    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One server: either `command` (stdio) or `url` (Streamable HTTP).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (stdio transport).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables for it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The server's MCP URL (Streamable HTTP transport).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Extra HTTP headers (e.g. `Authorization = "Bearer …"`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl McpServerConfig {
    /// Where the server is, or why the entry is unusable.
    pub(crate) fn endpoint(&self) -> Result<Endpoint, String> {
        match (&self.command, &self.url) {
            (Some(command), None) => Ok(Endpoint::Child {
                command: command.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                cwd: None,
                slirp: None,
            }),
            (None, Some(url)) => {
                // An `Authorization: Bearer x` header goes through rmcp's own auth field, which
                // it would otherwise overwrite.
                let mut headers = self.headers.clone();
                let token = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                    .map(|(k, v)| (k.clone(), v.clone()));
                let token = token.map(|(key, value)| {
                    headers.remove(&key);
                    value.strip_prefix("Bearer ").unwrap_or(&value).to_owned()
                });
                Ok(Endpoint::Http { url: url.clone(), token, headers })
            }
            (Some(_), Some(_)) => Err("set either `command` or `url`, not both".into()),
            (None, None) => Err("set `command` (stdio) or `url` (Streamable HTTP)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_transports_and_refuses_unknown_keys() {
        let config: McpServersConfig = toml::from_str(
            "[echo]\ncommand = \"echo-server\"\nargs = [\"-v\"]\nenv = { A = \"1\" }\n\
             [web]\nurl = \"http://127.0.0.1:1/mcp\"\nheaders = { Authorization = \"Bearer t\" }\n",
        )
        .unwrap();
        assert!(matches!(config.0["echo"].endpoint(), Ok(Endpoint::Child { .. })));
        let Ok(Endpoint::Http { token, headers, .. }) = config.0["web"].endpoint() else {
            panic!("expected http");
        };
        assert_eq!(token.as_deref(), Some("t"));
        assert!(headers.is_empty());
        let err = toml::from_str::<McpServersConfig>("[x]\ncomand = \"a\"\n").unwrap_err();
        assert!(err.to_string().contains("comand"), "{err}");
        assert!(McpServerConfig::default().endpoint().is_err());
    }
}
