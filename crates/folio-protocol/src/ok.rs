//! The constant `"ok"` fields of the HTTP bodies: `"ok": true` on every success body
//! ([`OkTrue`]), `"ok": false` on every error ([`OkFalse`]). A leaf: the bodies of every module
//! use it, and it uses none of them.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! constant_bool {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bool($value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                if bool::deserialize(deserializer)? == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(concat!("expected `ok: ", $value, "`")))
                }
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "const": $value })
            }
        }
    };
}

constant_bool! {
    /// The `"ok": true` of every success body (deserializes only from `true`).
    OkTrue = true
}

constant_bool! {
    /// The `"ok": false` of every error body (deserializes only from `false`).
    OkFalse = false
}
