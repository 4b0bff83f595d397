//! The Durable Object binding's unit: `env.NAME` and `state.storage`
//! (`durable_object.rs`), calls to an object on another thread or node
//! (`object_forward.rs`) and the object's hibernatable WebSockets
//! (`ws_object.rs`), registered together.

use crate::unit::Unit;

/// `env.NAME` for a Durable Object binding and `state.storage`.
pub(super) fn unit() -> Unit {
    // The WebSocket unit hands the sockets an object accepts to ws_object.rs.
    super::socket::set_hibernation(&super::ws_object::ObjectHibernation);
    Unit::new("durable_object")
        .js(&["28_durable_object.js", "28_websocket_pair.js"])
        .function(
            "objectIdFromName",
            super::durable_object::object_id_from_name,
        )
        .function(
            "objectNewUniqueId",
            super::durable_object::object_new_unique_id,
        )
        .function("objectIdValid", super::durable_object::object_id_valid)
        .function("objectGet", super::durable_object::object_get)
        .function("objectTake", super::durable_object::object_take)
        .function("objectWrite", super::durable_object::object_write)
        .function("objectList", super::durable_object::object_list)
        .function("objectGetAlarm", super::durable_object::object_get_alarm)
        .function("objectSetAlarm", super::durable_object::object_set_alarm)
        .function("objectNextTurn", super::durable_object::object_next_turn)
        .function("objectIsHome", super::object_forward::object_is_home)
        .function("objectCall", super::object_forward::object_call)
        .function("objectIdleTimer", super::durable_object::object_idle_timer)
        .function(
            "objectWebSocketCheck",
            super::ws_object::object_web_socket_check,
        )
        .function("objectWebSockets", super::ws_object::object_web_sockets)
        .function(
            "objectSetAutoResponse",
            super::ws_object::object_set_auto_response,
        )
        .function("objectAutoResponse", super::ws_object::object_auto_response)
        .function("webSocketAttach", super::ws_object::web_socket_attach)
        .function(
            "webSocketAutoResponseTime",
            super::ws_object::web_socket_auto_response_time,
        )
        .state::<super::ws_object::AutoResponses>()
}
