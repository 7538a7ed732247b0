//! A graph whose input is its first step's own (`GraphSpec::direct_input`).
//!
//! LangGraph triggers a functional-API entrypoint's node by the `START` channel
//! itself: the input is applied as the run's input checkpoint is made (step -1,
//! source `input`, the input in its state), that checkpoint's task is the
//! entrypoint, and the entrypoint runs in step 0, whose checkpoint ends the run. A
//! graph compiled with `direct_input` runs so, where any other graph runs `START` as
//! a task of a step of its own: a run is two checkpoints, and the step numbers of
//! its streams, callbacks and history are LangGraph's.

use super::{keep_write, Run};
use crate::graph::engine::{new_id, Task};
use crate::graph::error::GraphError;
use crate::graph::reserved::Source;
use crate::graph::spec::{NodeOutput, START};

impl Run<'_> {
    /// New input of a `direct_input` graph (see the module docs): `out` (the input's
    /// writes and gotos, as a `START` task outputs them) is applied at once and saved
    /// as the input checkpoint's writes; `START`'s edges, routers and the gotos give
    /// that checkpoint's tasks. The checkpoint is saved before the first step runs,
    /// not held for that step's save as `start_from_input`'s is: that step runs the
    /// user's function, whose `@task` calls save their results against it as they
    /// finish, and a crash meanwhile must find the input.
    pub(super) async fn start_direct(&mut self, out: NodeOutput) -> Result<(), GraphError> {
        self.step += 1;
        let id = new_id();
        let mut saved = self.per_step_writes();
        for (c, v) in &out.writes {
            keep_write(&mut self.exit, self.graph, &mut saved, (START, c, v), false)?;
        }
        self.graph.apply(&mut self.chans, out.writes)?;
        let view = self.graph.view(&self.chans);
        // What `START` leads to is routed as its task's output would be.
        let start = Task {
            id: format!("{id}:0:{START}"),
            node: START.to_owned(),
            arg: None,
            timeout: None,
        };
        let ctx = || {
            self.graph
                .ctx_for(&start, self.step, &self.opts, Vec::new())
        };
        let mut triggers = Vec::new();
        self.graph
            .successors(START, &out.goto, &view, ctx, &mut triggers)
            .await?;
        self.next = self.graph.make_tasks(&id, triggers);
        let saved = saved.unwrap_or_default();
        self.checkpoint(id, Source::Input, saved, Vec::new(), false)
            .await?;
        self.emit_checkpoint(Source::Input);
        Ok(())
    }
}
