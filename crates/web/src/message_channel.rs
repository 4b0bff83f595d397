//! MessageChannel and MessagePort (`js/29_message_channel.js`): JavaScript
//! only, its globals gated by the Worker's compatibility settings
//! (`expose_global_message_channel`, on from 2025-08-15 as in workerd).

use isolane_engine::api::Unit;

pub(crate) fn unit() -> Unit {
    Unit::new("message_channel")
        .js(&["29_message_channel.js"])
        .globals_if(&["MessageChannel", "MessagePort"], |compat| {
            compat.message_channel
        })
}
