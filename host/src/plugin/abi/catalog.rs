//! The catalog side of the contract (`@0.4.0` on): what a plugin offers
//! besides tools, and the requests that read, get and complete it, in host
//! types; and [`CatalogIndices`] and [`CatalogExports`], the enums over the
//! versions that have it. A plugin of an older version, or one that exports
//! only `tools`, has no catalog.

use serde::{Deserialize, Serialize};
use wasmtime::Store;
use wasmtime::component::{Component, Instance, InstancePre};

use super::{Caller, RawPart, ToolError, Version, v0_4};
use crate::catalog::{
    Completion, PromptSpec, ResourceContents, ResourceSpec, ResourceTemplateSpec, Role,
};
use crate::plugin::state::PluginState;

/// What a plugin's `describe` returned (not checked yet).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Described {
    pub(crate) resources: Vec<ResourceSpec>,
    pub(crate) templates: Vec<ResourceTemplateSpec>,
    pub(crate) prompts: Vec<PromptSpec>,
}

/// Who asks, in every catalog request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) call_id: String,
    pub(crate) invocation_id: String,
    pub(crate) caller: Option<Caller>,
}

/// One read of a resource.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    pub(crate) request: Request,
    pub(crate) uri: String,
    /// The template the URI matched, when it is not a listed resource.
    pub(crate) template: Option<String>,
    pub(crate) variables: Vec<(String, String)>,
}

/// One get of a prompt.
#[derive(Debug, Clone)]
pub(crate) struct Get {
    pub(crate) request: Request,
    /// The name the plugin declared.
    pub(crate) name: String,
    pub(crate) arguments: Vec<(String, String)>,
}

/// What a completion is for, as the plugin declared it.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Prompt(String),
    Template(String),
}

/// A request for completions.
#[derive(Debug, Clone)]
pub(crate) struct Complete {
    pub(crate) request: Request,
    pub(crate) target: Target,
    pub(crate) argument: String,
    pub(crate) value: String,
    pub(crate) context: Vec<(String, String)>,
}

/// A prompt message's content as the guest returned it.
#[derive(Debug)]
pub(crate) enum RawContent {
    Part(RawPart),
    Resource(ResourceContents),
}

impl RawContent {
    /// The bytes it holds, toward the output cap.
    pub(crate) fn size(&self) -> usize {
        match self {
            Self::Part(part) => part.size(),
            Self::Resource(contents) => contents_size(contents),
        }
    }
}

/// The bytes of a resource's content, toward the output cap.
pub(crate) fn contents_size(contents: &ResourceContents) -> usize {
    use crate::catalog::Body;
    let body = match &contents.body {
        Body::Text(text) => text.len(),
        Body::Bytes(bytes) => bytes.len(),
    };
    contents.uri.len() + contents.mime_type.as_ref().map_or(0, String::len) + body
}

/// A prompt's messages as the guest returned them.
#[derive(Debug)]
pub(crate) struct RawMessages {
    pub(crate) description: Option<String>,
    pub(crate) messages: Vec<(Role, RawContent)>,
}

/// Where a component's catalog exports are, per version.
#[derive(Clone)]
pub(crate) enum CatalogIndices {
    V0_4(v0_4::CatalogIndices),
}

impl CatalogIndices {
    /// The catalog exports of a component of `version`: `None` when its
    /// version has none or it exports only tools.
    ///
    /// # Errors
    /// When it exports a catalog of the wrong shape.
    pub(crate) fn new(
        version: Version,
        pre: &InstancePre<PluginState>,
        component: &Component,
    ) -> wasmtime::Result<Option<Self>> {
        match version {
            Version::V0_4 => Ok(v0_4::CatalogIndices::new(pre, component)?.map(Self::V0_4)),
            Version::V0_1 | Version::V0_2 | Version::V0_3 => Ok(None),
        }
    }

    /// The typed catalog exports of an instance.
    pub(crate) fn load(
        &self,
        store: &mut Store<PluginState>,
        instance: &Instance,
    ) -> wasmtime::Result<CatalogExports> {
        match self {
            Self::V0_4(indices) => Ok(CatalogExports::V0_4(indices.load(store, instance)?)),
        }
    }
}

/// The typed catalog exports of one instance.
pub(crate) enum CatalogExports {
    V0_4(v0_4::CatalogExports),
}

impl CatalogExports {
    /// Everything the plugin offers besides tools.
    pub(crate) async fn describe(
        &self,
        store: &mut Store<PluginState>,
    ) -> wasmtime::Result<Described> {
        match self {
            Self::V0_4(exports) => v0_4::describe(exports, store).await,
        }
    }

    /// Reads a resource.
    pub(crate) async fn read(
        &self,
        store: &mut Store<PluginState>,
        read: Read,
    ) -> wasmtime::Result<Result<Vec<ResourceContents>, ToolError>> {
        match self {
            Self::V0_4(exports) => v0_4::read(exports, store, read).await,
        }
    }

    /// Fills in a prompt.
    pub(crate) async fn get(
        &self,
        store: &mut Store<PluginState>,
        get: Get,
    ) -> wasmtime::Result<Result<RawMessages, ToolError>> {
        match self {
            Self::V0_4(exports) => v0_4::get(exports, store, get).await,
        }
    }

    /// Suggests values for an argument.
    pub(crate) async fn complete(
        &self,
        store: &mut Store<PluginState>,
        complete: Complete,
    ) -> wasmtime::Result<Result<Completion, ToolError>> {
        match self {
            Self::V0_4(exports) => v0_4::complete(exports, store, complete).await,
        }
    }
}
