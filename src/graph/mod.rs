//! Graphs: LangGraph's `StateGraph` model with a Rust step loop.

mod channel;
mod engine;
mod error;
mod messages;
mod spec;
mod state;
mod stream;
mod value;

pub use channel::{Channel, ChannelKind, Reducer};
pub use engine::{
    Graph, InterruptInfo, JsonCodec, Resume, RunInput, RunOptions, RunResult, Snapshot, ValueCodec,
};
pub use error::GraphError;
pub use messages::{MessageList, MessagesError, REMOVE_ALL_MESSAGES};
pub use spec::{
    BranchSpec, Goto, GraphSpec, NodeFailure, NodeOutput, NodeRunner, NodeSpec, Router,
    TaskContext, END, START,
};
pub use state::StateView;
pub use stream::{modes, StreamEvent, StreamSink};
pub use value::{HostValue, Val};
