//! The typed half of the OpenAPI import: operations (parameters, request body, the success
//! answer) and component schemas turned into the [`Api`] model connector_scaffold writes
//! clients from. `$ref`s are followed here with a hop limit ([`follow`]), schema nesting is
//! bounded, and named types that only refer to each other in a ring are refused.

use std::collections::BTreeMap;

use oas3::spec::{
    MediaType, ObjectOrReference, ObjectSchema, Operation, Parameter, ParameterIn, RequestBody,
    Response, Schema, SchemaType as Type, SchemaTypeSet as TypeSet,
};

use super::error::OpenApiError;
use crate::api::{Api, ApiOperation, NamedType, Names, Param, Prop, Ty, camel_ident};
use crate::api::{one_line, pascal_ident, placeholders};
use crate::config::METHODS;

/// The deepest schema nesting followed.
const MAX_DEPTH: usize = 40;
/// The most `$ref` hops from one reference to its object.
const MAX_HOPS: usize = 32;

/// Follow a reference to a component of kind `what` (`parameters`, …) with a hop limit.
pub(super) fn follow<T: Clone>(
    item: Option<&ObjectOrReference<T>>,
    map: impl Fn(&oas3::spec::Components) -> &oas3::Map<String, ObjectOrReference<T>>,
    spec: &oas3::Spec,
    what: &str,
) -> Result<Option<T>, OpenApiError> {
    let mut item = item;
    let mut seen = Vec::new();
    for _ in 0..MAX_HOPS {
        match item {
            None => return Ok(None),
            Some(ObjectOrReference::Object(object)) => return Ok(Some(object.clone())),
            Some(ObjectOrReference::Ref { ref_path, .. }) => {
                let prefix = format!("#/components/{what}/");
                let Some(name) = ref_path.strip_prefix(&prefix) else {
                    return Err(OpenApiError::Reference(format!(
                        "$ref {ref_path:?}: only references inside the document to \
                         {prefix}<name> are followed"
                    )));
                };
                if seen.contains(&name.to_owned()) {
                    seen.push(name.to_owned());
                    return Err(OpenApiError::Reference(format!(
                        "$ref loop in components/{what}: {}",
                        seen.join(" → ")
                    )));
                }
                seen.push(name.to_owned());
                let next = spec.components.as_ref().and_then(|c| map(c).get(name));
                if next.is_none() {
                    return Err(OpenApiError::Reference(format!(
                        "$ref {ref_path:?} points to nothing"
                    )));
                }
                item = next;
            }
        }
    }
    Err(OpenApiError::Reference(format!("$ref chain in components/{what} longer than {MAX_HOPS}")))
}

/// Schema names → their identifiers.
struct Types<'a> {
    spec: &'a oas3::Spec,
    idents: BTreeMap<String, String>,
}

pub(super) fn build_api(spec: &oas3::Spec, notes: &mut Vec<String>) -> Result<Api, OpenApiError> {
    let schemas = spec.components.as_ref().map(|c| &c.schemas);
    let mut idents = BTreeMap::new();
    let mut type_names = Names::default();
    for name in schemas.into_iter().flat_map(|s| s.keys()) {
        idents.insert(name.clone(), type_names.unique(&pascal_ident(name)));
    }
    let types = Types { spec, idents };
    let mut named = Vec::new();
    for (name, schema) in schemas.into_iter().flat_map(|s| s.iter()) {
        let ty = types.ty(schema, 0)?;
        named.push(NamedType {
            name: types.idents[name].clone(),
            description: description_of(schema),
            ty,
        });
    }
    check_alias_loops(&named)?;
    let mut op_names = Names::for_operations();
    let mut operations = Vec::new();
    for (path, item) in spec.paths.iter().flat_map(|p| p.iter()) {
        for (method, op) in item.methods() {
            let method = method.as_str().to_ascii_uppercase();
            if !METHODS.contains(&method.as_str()) {
                notes.push(format!("{method} {path} left out: connectors do not send {method}"));
                continue;
            }
            let mut params: Vec<Parameter> = Vec::new();
            for p in item.parameters.iter().chain(&op.parameters) {
                if let Some(param) = follow(Some(p), |c| &c.parameters, spec, "parameters")? {
                    params.retain(|q| !(q.name == param.name && q.location == param.location));
                    params.push(param);
                }
            }
            operations.push(types.operation(&mut op_names, path, &method, op, &params)?);
        }
    }
    Ok(Api { operations, types: named })
}

fn description_of(schema: &Schema) -> String {
    match schema {
        Schema::Object(obj) => match obj.as_ref() {
            ObjectOrReference::Object(o) => {
                one_line(o.description.as_deref().or(o.title.as_deref()).unwrap_or_default())
            }
            ObjectOrReference::Ref { .. } => String::new(),
        },
        Schema::Boolean(_) => String::new(),
    }
}

impl Types<'_> {
    fn operation(
        &self,
        names: &mut Names,
        path: &str,
        method: &str,
        op: &Operation,
        params: &[Parameter],
    ) -> Result<ApiOperation, OpenApiError> {
        let wanted = match &op.operation_id {
            Some(id) => camel_ident(id),
            None => camel_ident(&format!("{method} {path}")),
        };
        let param_of = |p: &Parameter| -> Result<Param, OpenApiError> {
            Ok(Param {
                name: p.name.clone(),
                ty: match &p.schema {
                    Some(schema) => self.ty(schema, 0)?,
                    None => Ty::String,
                },
                required: p.required.unwrap_or(false) || p.location == ParameterIn::Path,
                description: one_line(p.description.as_deref().unwrap_or_default()),
            })
        };
        let mut path_params = Vec::new();
        for name in placeholders(path) {
            let declared =
                params.iter().find(|p| p.location == ParameterIn::Path && p.name == name);
            path_params.push(match declared {
                Some(p) => param_of(p)?,
                None => Param { name, ty: Ty::String, required: true, description: String::new() },
            });
        }
        let mut query = Vec::new();
        for p in params.iter().filter(|p| p.location == ParameterIn::Query) {
            query.push(param_of(p)?);
        }
        let body = match follow(
            op.request_body.as_ref(),
            |c| &c.request_bodies,
            self.spec,
            "requestBodies",
        )? {
            Some(RequestBody { content, required, .. }) => {
                Some((self.media_ty(&content)?, required.unwrap_or(false)))
            }
            None => None,
        };
        let response = self.response_ty(op)?;
        Ok(ApiOperation {
            name: names.unique(&wanted),
            method: method.to_owned(),
            path: path.to_owned(),
            description: one_line(
                op.summary.as_deref().or(op.description.as_deref()).unwrap_or_default(),
            ),
            path_params,
            query: Some(query),
            body,
            response,
        })
    }

    /// The type of a success: the first 2xx answer (then `2XX`, then `default`).
    fn response_ty(&self, op: &Operation) -> Result<Ty, OpenApiError> {
        let Some(responses) = &op.responses else { return Ok(Ty::Unknown) };
        let mut codes: Vec<&String> =
            responses.keys().filter(|c| c.starts_with('2') && c.len() == 3).collect();
        codes.sort();
        let pick = codes
            .first()
            .copied()
            .or_else(|| responses.keys().find(|c| c.eq_ignore_ascii_case("2XX")))
            .or_else(|| responses.keys().find(|c| *c == "default"));
        let Some(code) = pick else { return Ok(Ty::Unknown) };
        if code == "204" {
            return Ok(Ty::Void);
        }
        match follow(responses.get(code), |c| &c.responses, self.spec, "responses")? {
            Some(Response { content, .. }) if content.is_empty() => Ok(Ty::Void),
            Some(Response { content, .. }) => self.media_ty(&content),
            None => Ok(Ty::Unknown),
        }
    }

    /// The JSON schema of a content map (`application/json`, or any `+json`), else unknown.
    fn media_ty(&self, content: &oas3::Map<String, MediaType>) -> Result<Ty, OpenApiError> {
        let json = content.iter().find(|(mime, _)| {
            let m = mime.to_ascii_lowercase();
            m.starts_with("application/json") || m.contains("+json") || m == "*/*"
        });
        match json.and_then(|(_, media)| media.schema.as_ref()) {
            Some(schema) => self.ty(schema, 0),
            None => Ok(Ty::Unknown),
        }
    }

    fn ty(&self, schema: &Schema, depth: usize) -> Result<Ty, OpenApiError> {
        if depth > MAX_DEPTH {
            return Err(OpenApiError::Unsupported(format!(
                "a schema nests deeper than {MAX_DEPTH} levels"
            )));
        }
        let object = match schema {
            Schema::Boolean(_) => return Ok(Ty::Unknown),
            Schema::Object(obj) => match obj.as_ref() {
                ObjectOrReference::Ref { ref_path, .. } => return self.named(ref_path),
                ObjectOrReference::Object(object) => object,
            },
        };
        self.object_ty(object, depth)
    }

    fn named(&self, ref_path: &str) -> Result<Ty, OpenApiError> {
        let Some(name) = ref_path.strip_prefix("#/components/schemas/") else {
            return Err(OpenApiError::Reference(format!(
                "$ref {ref_path:?}: only references inside the document to \
                 #/components/schemas/<name> are followed"
            )));
        };
        match self.idents.get(name) {
            Some(ident) => Ok(Ty::Named(ident.clone())),
            None => Err(OpenApiError::Reference(format!("$ref {ref_path:?} points to nothing"))),
        }
    }

    fn object_ty(&self, o: &ObjectSchema, depth: usize) -> Result<Ty, OpenApiError> {
        let list = |items: &[Schema]| -> Result<Vec<Ty>, OpenApiError> {
            items.iter().map(|s| self.ty(s, depth + 1)).collect()
        };
        if let Some(value) = &o.const_value {
            return Ok(Ty::Literal(value.clone()));
        }
        if !o.enum_values.is_empty() {
            let members: Vec<Ty> = o.enum_values.iter().cloned().map(Ty::Literal).collect();
            return Ok(union(members));
        }
        let mut parts = Vec::new();
        if !o.one_of.is_empty() {
            parts.push(union(list(&o.one_of)?));
        }
        if !o.any_of.is_empty() {
            parts.push(union(list(&o.any_of)?));
        }
        parts.extend(list(&o.all_of)?);
        let typed = match &o.schema_type {
            None => None,
            Some(TypeSet::Single(t)) => Some(self.typed(*t, o, depth)?),
            Some(TypeSet::Multiple(ts)) => {
                let members: Result<Vec<Ty>, _> =
                    ts.iter().map(|t| self.typed(*t, o, depth)).collect();
                Some(union(members?))
            }
        };
        let untyped_object = o.schema_type.is_none()
            && (!o.properties.is_empty() || o.additional_properties.is_some());
        if let Some(t) = typed {
            parts.push(t);
        } else if untyped_object {
            parts.push(self.typed(Type::Object, o, depth)?);
        }
        Ok(match parts.len() {
            0 => Ty::Unknown,
            1 => parts.remove(0),
            _ => Ty::All(parts),
        })
    }

    fn typed(&self, t: Type, o: &ObjectSchema, depth: usize) -> Result<Ty, OpenApiError> {
        Ok(match t {
            Type::String => Ty::String,
            Type::Integer | Type::Number => Ty::Number,
            Type::Boolean => Ty::Boolean,
            Type::Null => Ty::Null,
            Type::Array => match &o.items {
                Some(items) => Ty::Array(Box::new(self.ty(items, depth + 1)?)),
                None => Ty::Array(Box::new(Ty::Unknown)),
            },
            Type::Object => {
                let mut props = Vec::new();
                for (name, schema) in o.properties.iter() {
                    props.push(Prop {
                        name: name.clone(),
                        ty: self.ty(schema, depth + 1)?,
                        required: o.required.contains(name),
                        description: description_of(schema),
                    });
                }
                let rest = match &o.additional_properties {
                    None => None,
                    Some(Schema::Boolean(b)) if !b.0 => None,
                    Some(schema @ Schema::Object(_)) => Some(Box::new(self.ty(schema, depth + 1)?)),
                    Some(Schema::Boolean(_)) => Some(Box::new(Ty::Unknown)),
                };
                let rest = if props.is_empty() && rest.is_none() {
                    Some(Box::new(Ty::Unknown))
                } else {
                    rest
                };
                Ty::Object { props, rest }
            }
        })
    }
}

fn union(mut members: Vec<Ty>) -> Ty {
    members.dedup();
    if members.len() == 1 { members.remove(0) } else { Ty::Union(members) }
}

/// Refuse named types that are only references to each other in a ring (`A = B`, `B = A`):
/// a type reached through an object's property or a list's items may recur, one reached at
/// the top (directly, or in a union or intersection) may not.
fn check_alias_loops(types: &[NamedType]) -> Result<(), OpenApiError> {
    fn top(ty: &Ty, out: &mut Vec<String>) {
        match ty {
            Ty::Named(name) => out.push(name.clone()),
            Ty::Union(members) | Ty::All(members) => members.iter().for_each(|m| top(m, out)),
            _ => {}
        }
    }
    let edges: BTreeMap<&str, Vec<String>> = types
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            top(&t.ty, &mut out);
            (t.name.as_str(), out)
        })
        .collect();
    // Depth-first search with colours; the path is the loop's report.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks: BTreeMap<&str, Mark> = edges.keys().map(|k| (*k, Mark::New)).collect();
    for start in edges.keys() {
        if marks[start] != Mark::New {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        marks.insert(start, Mark::Open);
        while let Some((node, next)) = stack.last().copied() {
            let children = &edges[node];
            if next >= children.len() {
                marks.insert(node, Mark::Done);
                stack.pop();
                continue;
            }
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            let child = children[next].as_str();
            match marks.get(child).copied() {
                Some(Mark::Open) => {
                    let at = stack.iter().position(|(n, _)| *n == child).unwrap_or(0);
                    let mut ring: Vec<&str> = stack[at..].iter().map(|(n, _)| *n).collect();
                    ring.push(child);
                    return Err(OpenApiError::Reference(format!(
                        "$ref loop: the schemas {} are only references to each other, so no \
                         value can have that type; give one of them properties or items",
                        ring.join(" → ")
                    )));
                }
                Some(Mark::New) => {
                    marks.insert(child, Mark::Open);
                    stack.push((child, 0));
                }
                _ => {}
            }
        }
    }
    Ok(())
}
