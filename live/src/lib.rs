//! The live tier. For now it holds the embedded twin's object store.
pub mod twin;
