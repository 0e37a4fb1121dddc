//! Reading, getting and completing what a plugin offers besides tools: each
//! request in a fresh instance, under the plugin's limits and grants, as a
//! tool call; its output held to the output cap, secrets' values masked.

use std::collections::BTreeMap;

use wasmtime::Store;

use super::abi::catalog::{Complete, Get, RawContent, RawMessages, Read, Request, Target};
use super::abi::{self, ToolError};
use super::call::{Via, timeout};
use super::state::PluginState;
use super::{Plugin, abi::catalog::contents_size};
use crate::catalog::{
    Body, Completion, CompletionRef, MessageContent, PromptMessage, PromptMessages, PromptSpec,
    ResourceContents, ResourceSpec, ResourceTemplateSpec,
};
use crate::error::CallError;
use crate::tool::ToolCall;

/// One catalog request to a guest.
enum Ask {
    Read(Read),
    Get(Get),
    Complete(Complete),
}

/// What the guest answered.
enum Answer {
    Read(Vec<ResourceContents>),
    Get(RawMessages),
    Complete(Completion),
}

impl Plugin {
    /// Its resources at fixed URIs.
    pub fn resources(&self) -> &[ResourceSpec] {
        &self.inner.offered.resources
    }

    /// Its resource templates.
    pub fn resource_templates(&self) -> impl Iterator<Item = &ResourceTemplateSpec> {
        self.inner.offered.templates.iter().map(|(spec, _)| spec)
    }

    /// Its prompts, under the names it declared.
    pub fn prompts(&self) -> &[PromptSpec] {
        &self.inner.offered.prompts
    }

    /// The listed resource at `uri`, or the first of its templates that
    /// makes `uri`, as a resource spec (named after the template).
    pub(crate) fn resource_at(&self, uri: &str) -> Option<ResourceSpec> {
        let offered = &self.inner.offered;
        if let Some(spec) = offered.resource(uri) {
            return Some(spec.clone());
        }
        let (template, _) = offered.template_for(uri)?;
        let mut spec = ResourceSpec::new(uri, &template.name);
        spec.title.clone_from(&template.title);
        spec.description.clone_from(&template.description);
        spec.mime_type.clone_from(&template.mime_type);
        spec.plugin.clone_from(&template.plugin);
        Some(spec)
    }

    /// Reads the resource at `uri`: a listed one, or one a template makes
    /// (the guest hears which template and its variables). `call` says who
    /// asks (its tool name and arguments are not used).
    ///
    /// # Errors
    /// [`CallError::UnknownResource`] for a URI the plugin does not offer (or
    /// that its guest says it does not know), else as a tool call's.
    pub(crate) async fn read_resource(
        &self,
        call: ToolCall,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, CallError> {
        let call_id = call.call_id.clone();
        let offered = &self.inner.offered;
        let (template, variables) = if offered.resource(uri).is_some() {
            (None, Vec::new())
        } else {
            let (template, variables) =
                offered
                    .template_for(uri)
                    .ok_or_else(|| CallError::UnknownResource {
                        uri: uri.to_owned(),
                    })?;
            (Some(template.uri_template.clone()), variables)
        };
        let answer = self
            .ask(uri, call, |request| {
                Ask::Read(Read {
                    request,
                    uri: uri.to_owned(),
                    template,
                    variables,
                })
            })
            .await;
        let mut contents = match answer {
            Ok(Answer::Read(contents)) => contents,
            Err(Ok(ToolError::UnknownTool(_))) => {
                return Err(CallError::UnknownResource {
                    uri: uri.to_owned(),
                });
            }
            Err(Ok(e)) => return Err(self.tool_error(uri, &call_id, e)),
            Err(Err(e)) => return Err(e),
            Ok(_) => return Err(self.mismatch(uri)),
        };
        let size: usize = contents.iter().map(contents_size).sum();
        self.check_output_size(uri, size as u64)?;
        for contents in &mut contents {
            self.mask_contents(uri, &call_id, contents);
        }
        Ok(contents)
    }

    /// Fills in the prompt the plugin declared as `name` with `arguments`
    /// (checked against its spec first).
    ///
    /// # Errors
    /// [`CallError::UnknownPrompt`], [`CallError::InvalidArguments`], else as
    /// a tool call's.
    pub(crate) async fn get_prompt(
        &self,
        call: ToolCall,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<PromptMessages, CallError> {
        let call_id = call.call_id.clone();
        let spec = self
            .inner
            .offered
            .prompt(name)
            .ok_or_else(|| self.unknown_prompt(name))?;
        spec.check(&arguments)?;
        let answer = self
            .ask(name, call, |request| {
                Ask::Get(Get {
                    request,
                    name: name.to_owned(),
                    arguments: arguments.into_iter().collect(),
                })
            })
            .await;
        let got = match answer {
            Ok(Answer::Get(got)) => got,
            Err(Ok(ToolError::UnknownTool(_))) => return Err(self.unknown_prompt(name)),
            Err(Ok(e)) => return Err(self.tool_error(name, &call_id, e)),
            Err(Err(e)) => return Err(e),
            Ok(_) => return Err(self.mismatch(name)),
        };
        let size: usize = got
            .messages
            .iter()
            .map(|(_, content)| content.size())
            .sum::<usize>()
            + got.description.as_ref().map_or(0, String::len);
        self.check_output_size(name, size as u64)?;
        let mut messages = Vec::with_capacity(got.messages.len());
        for (role, content) in got.messages {
            let content = match content {
                RawContent::Part(part) => {
                    MessageContent::Part(self.convert_part(name, &call_id, part)?)
                }
                RawContent::Resource(mut contents) => {
                    self.mask_contents(name, &call_id, &mut contents);
                    MessageContent::Resource(contents)
                }
            };
            messages.push(PromptMessage { role, content });
        }
        let mut description = got.description;
        if let Some(text) = &mut description {
            self.mask_text(name, &call_id, text);
        }
        Ok(PromptMessages {
            description,
            messages,
        })
    }

    /// Suggests values for an argument of one of its prompts or a variable
    /// of one of its templates (`target` names them as the plugin declared
    /// them). Something it does not offer gets no suggestions.
    ///
    /// # Errors
    /// As a tool call's.
    pub(crate) async fn complete(
        &self,
        call: ToolCall,
        target: &CompletionRef,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
    ) -> Result<Completion, CallError> {
        let call_id = call.call_id.clone();
        let offered = &self.inner.offered;
        let (label, target) = match target {
            CompletionRef::Prompt(name) if offered.prompt(name).is_some() => {
                (name.as_str(), Target::Prompt(name.clone()))
            }
            CompletionRef::Template(template) if offered.template(template).is_some() => {
                (template.as_str(), Target::Template(template.clone()))
            }
            _ => return Ok(Completion::default()),
        };
        let answer = self
            .ask(label, call, |request| {
                Ask::Complete(Complete {
                    request,
                    target,
                    argument: argument.to_owned(),
                    value: value.to_owned(),
                    context: context
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                })
            })
            .await;
        let mut completion = match answer {
            Ok(Answer::Complete(completion)) => completion.capped(),
            Err(Ok(ToolError::UnknownTool(_))) => return Ok(Completion::default()),
            Err(Ok(e)) => return Err(self.tool_error(label, &call_id, e)),
            Err(Err(e)) => return Err(e),
            Ok(_) => return Err(self.mismatch(label)),
        };
        let size: usize = completion.values.iter().map(String::len).sum();
        self.check_output_size(label, size as u64)?;
        for value in &mut completion.values {
            self.mask_text(label, &call_id, value);
        }
        Ok(completion)
    }

    /// Runs one catalog request in a fresh instance: the guest's answer,
    /// its own error (`Err(Ok)`), or why it did not answer (`Err(Err)`).
    async fn ask(
        &self,
        label: &str,
        call: ToolCall,
        ask: impl FnOnce(Request) -> Ask,
    ) -> Result<Answer, Result<ToolError, CallError>> {
        let (mut store, instance, code) = self
            .instantiate(label, &call.call_id, &call.invocation_id, Via::of(&call))
            .await
            .map_err(Err)?;
        let Some(indices) = &code.catalog else {
            return Err(Err(self.mismatch(label)));
        };
        let exports = indices.load(&mut store, &instance).map_err(|e| {
            Err(CallError::Host {
                tool: label.to_owned(),
                reason: format!("the plugin's catalog exports: {e:#}"),
            })
        })?;
        let request = Request {
            caller: call.caller.map(|caller| abi::Caller {
                claims: caller.granted_claims(self.inner.grants.caller_claims()),
                issuer: caller.issuer().to_owned(),
                subject: caller.subject().to_owned(),
                scopes: caller.scopes().to_vec(),
            }),
            call_id: call.call_id,
            invocation_id: call.invocation_id,
        };
        let deadline = store.data().deadline.clone();
        let store = &mut store;
        match ask(request) {
            Ask::Read(read) => {
                let result = timeout(deadline, exports.read(store, read)).await;
                self.answer(store, label, result, Answer::Read)
            }
            Ask::Get(get) => {
                let result = timeout(deadline, exports.get(store, get)).await;
                self.answer(store, label, result, Answer::Get)
            }
            Ask::Complete(complete) => {
                let result = timeout(deadline, exports.complete(store, complete)).await;
                self.answer(store, label, result, Answer::Complete)
            }
        }
    }

    /// A guest call's outcome, settled (traps and budgets classified).
    fn answer<T>(
        &self,
        store: &mut Store<PluginState>,
        label: &str,
        result: Result<wasmtime::Result<Result<T, ToolError>>, tokio::time::error::Elapsed>,
        wrap: fn(T) -> Answer,
    ) -> Result<Answer, Result<ToolError, CallError>> {
        match self.settle(store, label, result) {
            Ok(Ok(answer)) => Ok(wrap(answer)),
            Ok(Err(e)) => Err(Ok(e)),
            Err(e) => Err(Err(e)),
        }
    }

    fn unknown_prompt(&self, name: &str) -> CallError {
        CallError::UnknownPrompt {
            prompt: name.to_owned(),
            available: self.prompts().iter().map(|p| p.name.clone()).collect(),
        }
    }

    /// A plugin whose code lost its catalog (cannot happen: the code is
    /// checked against its manifest).
    fn mismatch(&self, label: &str) -> CallError {
        CallError::Host {
            tool: label.to_owned(),
            reason: "the plugin's code has no catalog".into(),
        }
    }

    /// Masks secrets' values in text a catalog request returned.
    fn mask_text(&self, label: &str, call_id: &str, text: &mut String) {
        if self.inner.grants.mask_text(text) {
            self.warn_leak(label, call_id, "what it returned");
        }
    }

    fn mask_contents(&self, label: &str, call_id: &str, contents: &mut ResourceContents) {
        if let Body::Text(text) = &mut contents.body {
            self.mask_text(label, call_id, text);
        }
    }
}
