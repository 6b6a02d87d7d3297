//! askbus: let AI agents stop and ask a human, and get the answer back.
//!
//! This facade re-exports the library crates so an agent runtime needs one dependency:
//!
//! - [`bus`] ([`askbus_bus`]): the typed, non-blocking event bus with replayable history.
//! - [`question`] ([`askbus_question`]): pending questions, replies, timeouts.
//! - [`tool`] ([`askbus_tool`]): the same `ask` offered to an LLM as a tool.
//!
//! The most used items are also re-exported at the top level.
#![doc = include_str!("../../../README.md")]

pub use askbus_bus as bus;
pub use askbus_question as question;
pub use askbus_tool as tool;

pub use askbus_bus::{Bus, Envelope, Event, EventId};
pub use askbus_question::{
    Answer, AskError, QuestionId, QuestionInfo, QuestionOption, QuestionRequest, QuestionService,
    ReplyError, SubmitError, Timeout, ToolRef,
};
