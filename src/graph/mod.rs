//! Graphs: LangGraph's `StateGraph` model with a Rust step loop.

mod channel;
mod codec;
mod engine;
mod error;
mod guard;
mod history;
mod interrupt;
mod messages;
mod nested;
pub mod options;
mod pending;
mod replay;
mod reserved;
mod run;
mod snapshot;
mod spec;
mod state;
mod state_cache;
mod stream;
pub mod tagged;
mod update;
mod value;

pub use channel::{Channel, ChannelKind, Reducer};
pub use codec::{parse_text, JsonCodec, ValueCodec};
pub use engine::Graph;
pub use error::GraphError;
pub use guard::{Drain, Failed, NodeGuard, Progress, TimeoutPolicy};
pub use history::Snapshot;
pub use interrupt::{interrupt_id, InterruptInfo, InterruptKind};
pub use messages::{MessageList, MessagesError, REMOVE_ALL_MESSAGES};
pub use nested::questions;
pub use pending::TaskStatus;
pub use replay::{stable_ns, Replay, ReplayStart};
pub use reserved::{is_hidden, Reserved, ENGINE_NODE, HIDDEN_PREFIX, ROOT};
pub use run::{
    Calls, Durability, Lent, Multitask, Resume, RunInput, RunOptions, RunResult, StepObserver,
};
pub use snapshot::SNAPSHOT_EVERY;
pub use spec::{
    BranchSpec, Goto, GraphSpec, LaterRoute, Nest, NodeFailure, NodeOutput, NodeRunner, NodeSpec,
    Router, TaskContext, END, START,
};
pub use state::StateView;
pub use state_cache::STATE_CACHE_THREADS;
pub use stream::{modes, StreamEvent, StreamSink, ToolEvent, ToolReturn};
pub use update::{StateUpdate, INPUT as INPUT_NODE};
pub use value::{HostValue, Val};

/// A map keyed by the graph's own names (channels, nodes), hashed with foldhash
/// instead of SipHash: the keys come from the graph's definition, not from outside,
/// and a step looks them up several times (SipHash was ~4 % of a W4 step's
/// instructions without a checkpointer).
pub(crate) type NameMap<V> = std::collections::HashMap<String, V, foldhash::fast::RandomState>;

/// A set of the graph's own names (see [`NameMap`]).
pub(crate) type NameSet = std::collections::HashSet<String, foldhash::fast::RandomState>;
