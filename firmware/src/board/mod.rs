//! The board: where the mailbox is, which clock measures, how to reach the timer. One module per
//! board; `main.rs` knows nothing board-specific.

mod mps2;
pub use mps2::*;
