//! The session host: the live sessions of one hands process, their turns, their event streams,
//! and the questions and approvals waiting on a user. `hands serve`'s session API, `hands run` and
//! `hands chat` are thin front ends over it. Everything it does is written to the [`Store`](hands_store::Store) first,
//! so a restarted hands resumes sessions with their transcript intact.
//!
//! # Sessions
//!
//! A live session is a [`hands_core::Session`] (with its project id) plus its event hub, its
//! conversation and its turn state. A session that is not live (created by an earlier hands, or
//! forgotten) is loaded from the store on first use ([`Host::get_session`],
//! [`Host::post_message`], …): its record, its transcript (with results added for tool calls that
//! an earlier hands left unanswered) and its todo list. Each live session gets an
//! [`AskerHandle`](hands_core::ask::AskerHandle) (ask_user's questions go to the host's [`PendingQuestions`](hands_core::ask::PendingQuestions) and are announced
//! as `question` events; [`Host::answer`] routes the answer), an [`ApproverHandle`](hands_core::approval::ApproverHandle) (approvals are
//! announced as `approval_requested` events and wait for [`Host::decide`]) and, when the host has a
//! provider, a [`SubagentEnv`](crate::subagent::SubagentEnv) for spawn_subagent. Two watchers follow the session: mode changes
//! become `mode_changed` events and update the stored session; todo_write's list becomes
//! `todos_changed` events and the stored todos. A [`SecretAskerHandle`](hands_core::secret::SecretAskerHandle) announces the secrets tool's
//! requests as `secret_requested` events and waits for [`Host::give_secret`] (or
//! [`Host::decline_secret`]); the value goes to the tool alone.
//!
//! # Events
//!
//! Every event is appended to the store first, which assigns its id, and then broadcast to the
//! session's live subscribers; one lock per session covers both steps, so the broadcast order is
//! the id order. [`Host::subscribe`] hands over without loss or duplicates: it subscribes to the
//! broadcast first, then reads the stored events after the requested id, and
//! [`Subscription::next`] skips live events whose id is not above the last one replayed. An event
//! stored before the read is in the replay (and skipped if it also arrives live); an event stored
//! after the read is broadcast after the subscription began, so it arrives live. A subscriber that
//! falls behind the broadcast buffer reads what it missed from the store.
//!
//! # Turns
//!
//! [`Host::post_message`] records the turn, emits `turn_started` and spawns the loop
//! ([`crate::turn`]) on its own task; a second message while a turn runs is a `Conflict`. The loop's
//! messages are stored after each step, its calls as tool-call records, and everything it reports
//! as events; the turn ends with `turn_ended` (and `error` first when the provider failed).
//!
//! # Checkpoints
//!
//! Each turn that changes something is checkpointed before its first change and at its end
//! (`checkpoint_created` events); [`Host::checkpoints`], [`Host::checkpoint_diff`] and
//! [`Host::restore_checkpoint`] list, compare and restore a session's checkpoints — the code, the
//! conversation, or both — refused while a turn runs.

mod api;
mod checkpoints;
mod config;
mod error;
mod events;
mod ids;
mod lifecycle;
mod live;
mod lock;
mod metrics;
mod node;
mod parts;
mod preview;
pub mod roots;
mod secrets;
mod takeover;
mod turns;
mod user;

pub use api::Host;
pub use checkpoints::{CheckpointDiff, CheckpointInfo, FileChange, RestoreOutcome, RestoreScope};
pub use config::AgentConfig;
pub use error::{HostError, HostResult};
pub use events::{FeedHandle, Subscription};
pub use metrics::{BUCKETS, HistogramSnapshot, MetricsSnapshot};
pub use node::{ClusterConfig, HostOptions, Route};
pub use parts::{HostParts, NewSession, SessionInfo};
pub use secrets::MIN_SECRET_CHARS;
