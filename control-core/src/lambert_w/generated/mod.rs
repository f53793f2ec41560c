//! The tables and coefficients of [`super`], each file written whole by a tool under
//! `control-core/tools/` (its first line names the tool and its arguments). Do not edit them:
//! change the tool and regenerate; `scripts/check-lambert-tables.sh` regenerates every file and
//! diffs. `#[rustfmt::skip]` keeps rustfmt from reflowing them.

#[rustfmt::skip]
mod fit;
#[rustfmt::skip]
mod log;
#[rustfmt::skip]
mod w0_l;
#[rustfmt::skip]
mod w0_neg;
#[rustfmt::skip]
mod w0_pos;
#[rustfmt::skip]
mod w0_q;
#[rustfmt::skip]
mod wm1_m;
#[rustfmt::skip]
mod wm1_neg;
#[rustfmt::skip]
mod wm1_q;

pub use fit::{E_HI, E_LO, INV_E_HI, INV_E_LO};
pub(crate) use fit::{
    EXP_TABLE, EXPU, INV_LN2_N, LN_TABLE, LN2_N_HI, LN2_N_LO, U0_BRANCH, UM1_BRANCH, W_BRANCH_P,
    W0_LOG, W0_N0, W0_N1, W0_N2, W0_P0, W0_SMALL, W0_X0, W0_X1, W0_X2, W0_X3, WM1_LOG, WM1_N0,
    WM1_N1, WM1_N2, WM1_P0,
};
pub(crate) use log::{LN2_HI, LN2_LO, LOG_TABLE};
pub(crate) use w0_l::W0_L;
pub(crate) use w0_neg::W0_NEG;
pub(crate) use w0_pos::W0_POS;
pub(crate) use w0_q::W0_Q;
pub(crate) use wm1_m::WM1_M;
pub(crate) use wm1_neg::WM1_NEG;
pub(crate) use wm1_q::WM1_Q;
