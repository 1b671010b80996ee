//! The listening connection: one per process, outside the pool, `LISTEN hands_events`; each
//! notification (`session:id`) becomes a [`Note`] on a broadcast channel. When the connection
//! drops it is made again (with a growing pause), and a [`Note::Resync`] tells the followers to
//! re-read the store, which covers whatever was announced meanwhile.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};

use super::store::PostgresStore;
use super::tls::Tls;
use crate::cluster::Note;

/// The channel appends announce on.
pub(crate) const CHANNEL: &str = "hands_events";

/// Listen until the last receiver of `tx` is gone.
pub(crate) async fn run(store: Arc<PostgresStore>, tx: broadcast::Sender<Note>) {
    let mut pause = Duration::from_millis(100);
    loop {
        let config = store.pool().config().clone();
        let outcome = match store.pool().tls().clone() {
            Tls::Plain => match config.connect(NoTls).await {
                Ok((client, connection)) => listen(client, connection, &tx).await,
                Err(err) => Err(err),
            },
            Tls::Rustls(make) => match config.connect(make).await {
                Ok((client, connection)) => listen(client, connection, &tx).await,
                Err(err) => Err(err),
            },
        };
        if tx.receiver_count() == 0 {
            return;
        }
        match outcome {
            Ok(()) => pause = Duration::from_millis(100),
            Err(err) => {
                tracing::warn!(%err, "the session store's listening connection failed; retrying");
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
        tokio::time::sleep(pause).await;
    }
}

async fn listen<S, T>(
    client: Client,
    mut connection: Connection<S, T>,
    tx: &broadcast::Sender<Note>,
) -> Result<(), tokio_postgres::Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    let pump = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if let Some(note) = parse(n.payload()) {
                        let _ = tx.send(note);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(err),
                None => return Ok(()),
            }
        }
    };
    let subscribe = async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        let _ = tx.send(Note::Resync);
        // Held until the connection ends; checked now and then so that a process whose
        // followers are all gone stops listening.
        while tx.receiver_count() > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok(())
    };
    tokio::select! {
        result = pump => result,
        result = subscribe => result,
    }
}

/// `session:id` (the session id may itself hold colons: the id is after the last one).
fn parse(payload: &str) -> Option<Note> {
    let (session, id) = payload.rsplit_once(':')?;
    Some(Note::Event { session_id: session.to_owned(), id: id.parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_name_the_session_and_the_id() {
        let event = |s: &str, id| Some(Note::Event { session_id: s.into(), id });
        assert_eq!(parse("s1:42"), event("s1", 42));
        assert_eq!(parse("a:b:c:7"), event("a:b:c", 7));
        assert_eq!(parse("s:0"), event("s", 0));
        assert_eq!(parse("nocolon"), None);
        assert_eq!(parse("s:x"), None);
    }
}
