//! OpenAPI tool sources (`ironloop::sources::openapi`): a 3.0 YAML and a 3.1 JSON
//! petstore-shaped spec become tools (names, schemas, `$ref`s resolved, cycles,
//! operations without `operationId`, skipped operations, refused documents), and the
//! tools run against a loopback HTTP server: path, query, header and body parameters
//! arrive as the spec says, a non-2xx status is an error naming status and body (with
//! credentials scrubbed), and timeouts, cancellation and truncation behave.
#![cfg(feature = "openapi")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ironloop::sources::openapi::{OpenApiError, OpenApiOptions, OpenApiToolset};
use ironloop::{Executor, RunContext, ToolCall, ToolContext, ToolError, ToolRegistry};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[path = "support/http.rs"]
mod http_support;
use http_support::read_request;

const PETSTORE_30: &str = r##"
openapi: 3.0.3
info:
  title: Swagger Petstore
  version: 1.0.0
servers:
  - url: "{scheme}://petstore.example.com/{basePath}"
    variables:
      scheme:
        default: https
        enum: [https, http]
      basePath:
        default: v1
paths:
  /pets:
    get:
      summary: List all pets
      operationId: listPets
      tags: [pets]
      parameters:
        - $ref: '#/components/parameters/limit'
        - name: tags
          in: query
          description: Tags to filter by
          schema:
            type: array
            items:
              type: string
        - name: filter[status]
          in: query
          schema:
            type: string
            enum: [available, sold]
      responses:
        '200':
          description: A paged array of pets
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Pets'
    post:
      summary: Create a pet
      operationId: createPet
      parameters:
        - name: X-Request-Id
          in: header
          required: true
          schema:
            type: string
        - name: Authorization
          in: header
          schema:
            type: string
      requestBody:
        $ref: '#/components/requestBodies/NewPet'
      responses:
        '201':
          description: Created
  /pets/{petId}:
    parameters:
      - name: petId
        in: path
        required: true
        description: The id of the pet
        schema:
          type: string
    get:
      summary: Info for a specific pet
      operationId: showPetById
      responses:
        '200':
          description: The pet
        default:
          description: unexpected error
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Error'
    delete:
      description: Deletes a pet. Needs a request id.
      parameters:
        - name: X-Request-Id
          in: header
          required: true
          schema:
            type: string
        - name: hard
          in: query
          schema:
            type: boolean
            default: false
      responses:
        '204':
          description: Deleted
    patch:
      operationId: updatePet
      requestBody:
        required: true
        content:
          application/merge-patch+json:
            schema:
              $ref: '#/components/schemas/NewPet'
      responses:
        '200':
          description: Updated
  /pets/{petId}/photo:
    put:
      operationId: uploadPhoto
      requestBody:
        required: true
        content:
          image/png:
            schema:
              type: string
              format: binary
      responses:
        '204':
          description: Stored
  /categories/{categoryId}:
    get:
      operationId: getCategory
      parameters:
        - name: categoryId
          in: path
          required: true
          schema:
            type: integer
            minimum: 1
      responses:
        '200':
          description: The category
components:
  parameters:
    limit:
      name: limit
      in: query
      description: How many items to return at one time (max 100)
      required: false
      schema:
        type: integer
        format: int32
        maximum: 100
  requestBodies:
    NewPet:
      description: The pet to add
      required: true
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Pet'
        application/xml:
          schema:
            $ref: '#/components/schemas/Pet'
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id:
          type: integer
          format: int64
          readOnly: true
        name:
          type: string
          example: doggie
        tag:
          type: string
          nullable: true
        age:
          type: integer
          minimum: 0
          exclusiveMinimum: true
        status:
          type: string
          enum: [available, pending, sold]
          nullable: true
        category:
          $ref: '#/components/schemas/Category'
      xml:
        name: pet
    NewPet:
      type: object
      required: [name]
      properties:
        name:
          type: string
        tag:
          type: string
    Category:
      type: object
      properties:
        id:
          type: integer
        name:
          type: string
        parent:
          $ref: '#/components/schemas/Category'
    Pets:
      type: array
      items:
        $ref: '#/components/schemas/Pet'
    Error:
      type: object
      required: [code, message]
      properties:
        code:
          type: integer
        message:
          type: string
"##;

const PETSTORE_31: &str = r##"{
  "openapi": "3.1.0",
  "info": {"title": "Petstore 3.1", "version": "2.0.0"},
  "servers": [{"url": "/v1"}],
  "paths": {
    "/pets": {"$ref": "#/components/pathItems/Pets"},
    "/pets/{petId}": {
      "get": {
        "operationId": "showPetById",
        "summary": "Info for a specific pet",
        "parameters": [
          {"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}}
        ],
        "responses": {"200": {"description": "The pet"}}
      }
    },
    "/pets/search": {
      "get": {
        "operationId": "pets.search",
        "parameters": [
          {"name": "where", "in": "query", "required": true,
           "content": {"application/json": {"schema": {"type": "object"}}}}
        ],
        "responses": {"200": {"description": "Matches"}}
      }
    }
  },
  "components": {
    "pathItems": {
      "Pets": {
        "get": {
          "operationId": "listPets",
          "parameters": [
            {"name": "limit", "in": "query", "schema": {"type": ["integer", "null"], "maximum": 100}}
          ],
          "responses": {"200": {"description": "Pets"}}
        },
        "post": {
          "operationId": "createPet",
          "requestBody": {
            "required": true,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}
          },
          "responses": {"201": {"description": "Created"}}
        }
      }
    },
    "schemas": {
      "Pet": {
        "type": "object",
        "required": ["name"],
        "properties": {
          "id": {"type": "integer", "readOnly": true},
          "name": {"type": "string"},
          "tag": {"type": ["string", "null"]},
          "owner": {"$ref": "#/components/schemas/Person", "description": "Who owns it"}
        }
      },
      "Person": {
        "type": "object",
        "properties": {
          "name": {"type": "string"},
          "friends": {"type": "array", "items": {"$ref": "#/components/schemas/Person"}}
        }
      }
    }
  }
}"##;

const KEY: &str = "sk-live-0123456789abcdef";

fn names(ts: &OpenApiToolset) -> Vec<String> {
    ts.tools()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect()
}

fn params_of(ts: &OpenApiToolset, name: &str) -> Value {
    ts.tools()
        .iter()
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .definition()
        .parameters
        .clone()
}

#[test]
fn a_30_yaml_spec_becomes_tools() {
    let ts = OpenApiToolset::from_str(PETSTORE_30, OpenApiOptions::default()).unwrap();
    assert_eq!(ts.title(), "Swagger Petstore");
    assert_eq!(ts.base_url(), Some("https://petstore.example.com/v1"));
    assert_eq!(
        names(&ts),
        [
            "listPets",
            "createPet",
            "showPetById",
            "delete_pets_petId",
            "updatePet",
            "getCategory"
        ]
    );
    assert_eq!(ts.skipped().len(), 1);
    assert!(
        ts.skipped()[0].starts_with("PUT /pets/{petId}/photo"),
        "{:?}",
        ts.skipped()
    );

    // Query parameters: a component parameter, an array, a renamed one.
    let list = params_of(&ts, "listPets");
    let props = &list["properties"];
    assert_eq!(props["limit"]["type"], "integer");
    assert_eq!(props["limit"]["maximum"], 100);
    let d = props["limit"]["description"].as_str().unwrap();
    assert!(
        d.starts_with("How many items") && d.ends_with("(query parameter)"),
        "{d}"
    );
    assert_eq!(props["tags"]["items"]["type"], "string");
    let renamed = props["filter_status"]["description"].as_str().unwrap();
    assert!(renamed.contains("\"filter[status]\""), "{renamed}");
    assert!(list.get("required").is_none());
    assert_eq!(list["additionalProperties"], false);

    // A header parameter and a body from a component, `$ref`s inlined.
    let create = params_of(&ts, "createPet");
    assert_eq!(create["required"], json!(["body", "X-Request-Id"]));
    assert!(
        create["properties"].get("Authorization").is_none(),
        "Authorization header parameters are ignored (OpenAPI says so)"
    );
    assert!(create["properties"]["X-Request-Id"]["description"]
        .as_str()
        .unwrap()
        .contains("header parameter"));
    let body = &create["properties"]["body"];
    assert_eq!(body["description"], "The pet to add");
    assert!(body["properties"].get("id").is_none(), "readOnly dropped");
    assert_eq!(body["required"], json!(["name"]));
    assert_eq!(body["properties"]["name"]["examples"], json!(["doggie"]));
    assert_eq!(body["properties"]["tag"]["type"], json!(["string", "null"]));
    assert_eq!(body["properties"]["age"]["exclusiveMinimum"], 0);
    assert!(body["properties"]["age"].get("minimum").is_none());
    assert_eq!(
        body["properties"]["status"]["enum"],
        json!(["available", "pending", "sold", null])
    );
    assert!(body.get("xml").is_none());
    let category = &body["properties"]["category"];
    assert_eq!(category["properties"]["name"]["type"], "string");
    let parent = &category["properties"]["parent"];
    assert_eq!(parent["type"], "object");
    assert!(parent["description"]
        .as_str()
        .unwrap()
        .contains("recursive"));
    assert!(!create.to_string().contains("$ref"));

    // Path-level parameters reach every operation; no operationId → method_path.
    let del = ts
        .tools()
        .into_iter()
        .find(|t| t.definition().name == "delete_pets_petId")
        .unwrap();
    assert_eq!(
        del.definition().description,
        "Deletes a pet. Needs a request id."
    );
    assert_eq!(
        del.definition().parameters["required"],
        json!(["petId", "X-Request-Id"])
    );
    assert_eq!(
        params_of(&ts, "showPetById")["properties"]["petId"]["description"],
        "The id of the pet (path parameter)"
    );
    assert_eq!(
        params_of(&ts, "getCategory")["properties"]["categoryId"]["minimum"],
        1
    );

    // Every schema is valid JSON Schema: the registry compiles a validator per tool.
    let registry = ToolRegistry::new();
    for t in ts.tools() {
        registry.register(t).unwrap();
    }
    for op in ts.operations() {
        assert_eq!(op.base_url(), "https://petstore.example.com/v1");
    }
}

#[test]
fn a_31_json_spec_becomes_tools() {
    let err = OpenApiToolset::from_str(PETSTORE_31, OpenApiOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, OpenApiError::Config(_)), "{err:?}");
    assert!(
        msg.contains("\"/v1\" is relative") && msg.contains("base_url"),
        "{msg}"
    );

    let ts = OpenApiToolset::from_str(
        PETSTORE_31,
        OpenApiOptions {
            spec_url: Some("http://api.test:8080/specs/openapi.json".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ts.base_url(), Some("http://api.test:8080/v1"));
    assert_eq!(ts.version(), "2.0.0");
    assert_eq!(
        names(&ts),
        ["listPets", "createPet", "showPetById", "pets_search"]
    );
    let list = params_of(&ts, "listPets");
    assert_eq!(
        list["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    let body = &params_of(&ts, "createPet")["properties"]["body"];
    assert!(body["properties"].get("id").is_none());
    let owner = &body["properties"]["owner"];
    assert_eq!(owner["description"], "Who owns it");
    assert_eq!(owner["properties"]["name"]["type"], "string");
    let friend = &owner["properties"]["friends"]["items"];
    assert!(friend["description"]
        .as_str()
        .unwrap()
        .contains("recursive"));
    assert_eq!(
        params_of(&ts, "showPetById")["properties"]["petId"]["type"],
        "integer"
    );
    let registry = ToolRegistry::new();
    for t in ts.tools() {
        registry.register(t).unwrap();
    }
}

#[test]
fn bad_documents_are_refused_with_a_reason() {
    let remote = r##"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
      "servers": [{"url": "http://h"}],
      "paths": {"/a": {"post": {"operationId": "a", "requestBody": {"content":
        {"application/json": {"schema": {"$ref": "other.yaml#/Pet"}}}}}}}}"##;
    let err = OpenApiToolset::from_str(remote, OpenApiOptions::default()).unwrap_err();
    assert!(matches!(err, OpenApiError::Invalid(_)));
    let msg = err.to_string();
    assert!(
        msg.contains("other.yaml#/Pet") && msg.contains("POST /a"),
        "{msg}"
    );

    let dangling = remote.replace("other.yaml#/Pet", "#/components/schemas/Nope");
    let msg = OpenApiToolset::from_str(&dangling, OpenApiOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("points at nothing"), "{msg}");

    let swagger = "swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n";
    let msg = OpenApiToolset::from_str(swagger, OpenApiOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("Swagger 2.0"), "{msg}");

    let err = OpenApiToolset::from_str("a: [b\n", OpenApiOptions::default()).unwrap_err();
    assert!(matches!(err, OpenApiError::Parse(_)), "{err:?}");
    let err = OpenApiToolset::from_str("{\"openapi\": ", OpenApiOptions::default()).unwrap_err();
    assert!(matches!(err, OpenApiError::Parse(_)), "{err:?}");

    let no_servers = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get: {}\n";
    let msg = OpenApiToolset::from_str(no_servers, OpenApiOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("no base URL") && msg.contains("base_url"),
        "{msg}"
    );
    let ts = OpenApiToolset::from_str(
        no_servers,
        OpenApiOptions {
            base_url: Some("http://127.0.0.1:9/x".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(names(&ts), ["get_a"]);

    let err =
        OpenApiToolset::from_file("/nonexistent/spec.yaml", OpenApiOptions::default()).unwrap_err();
    assert!(matches!(err, OpenApiError::Io { .. }));

    let bad_header = OpenApiOptions {
        base_url: Some("http://127.0.0.1:9".into()),
        headers: vec![("Authorization".into(), format!("Bearer {KEY}\n"))],
        ..Default::default()
    };
    let msg = OpenApiToolset::from_str(no_servers, bad_header)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("Authorization") && !msg.contains(KEY), "{msg}");
}

#[test]
fn names_are_sanitised_and_unique() {
    let spec = json!({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://h"}],
        "paths": {
            "/a": {"get": {"operationId": "pets.list/all"}, "post": {"operationId": "pets.list all"}},
            "/b": {"get": {"operationId": "x".repeat(80)}},
            "/c/{id}/d": {"get": {}},
        }
    });
    let ts = OpenApiToolset::from_value(spec, OpenApiOptions::default()).unwrap();
    let n = names(&ts);
    assert_eq!(n[0], "pets_list_all");
    assert_eq!(n[1], "pets_list_all_2");
    assert_eq!(n[2].len(), 64);
    assert!(
        n[2].starts_with(&"x".repeat(55)),
        "cut, with a hash of the whole: {}",
        n[2]
    );
    assert_eq!(n[3], "get_c_id_d");
    // An undeclared path placeholder is still asked for.
    assert_eq!(
        ts.tools()[3].definition().parameters["required"],
        json!(["id"])
    );
    assert_eq!(ts.tools()[3].definition().description, "GET /c/{id}/d");
}

// ---------------------------------------------------------------------------------
// A loopback petstore-ish server: echoes each request as JSON, with a few special
// paths (a 404 that echoes the credentials, a slow one, a big one, the spec).

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    query: String,
    headers: HashMap<String, String>,
    body: String,
}

struct Server {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, s).await;
                });
            }
        });
        Server { addr, seen, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn last(&self) -> Seen {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a request")
    }
}

async fn serve(mut sock: TcpStream, seen: Arc<Mutex<Vec<Seen>>>) -> std::io::Result<()> {
    let Some(req) = read_request(&mut sock).await? else {
        return Ok(());
    };
    let (method, target, headers) = (req.method, req.target, req.headers);
    let body = String::from_utf8_lossy(&req.body).into_owned();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (target.clone(), String::new()),
    };
    let req = Seen {
        method,
        path: path.clone(),
        query,
        headers,
        body,
    };
    seen.lock().unwrap().push(req.clone());
    let (status, ctype, text) = if path == "/openapi.json" {
        (200, "application/json", PETSTORE_31.to_string())
    } else if path.starts_with("/slow/") {
        tokio::time::sleep(Duration::from_secs(5)).await;
        (200, "application/json", "{}".to_string())
    } else if path.starts_with("/big/") {
        (200, "text/plain", "x".repeat(10_000))
    } else if path.ends_with("/pets/999") {
        let auth = req
            .headers
            .get("authorization")
            .cloned()
            .unwrap_or_default();
        let msg = json!({"error": "pet 999 not found", "you_sent": auth});
        (404, "application/json", msg.to_string())
    } else {
        let echo = json!({
            "method": req.method,
            "path": req.path,
            "query": req.query,
            "headers": req.headers,
            "body": req.body,
        });
        (200, "application/json", echo.to_string())
    };
    let resp = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{text}",
        text.len()
    );
    sock.write_all(resp.as_bytes()).await?;
    sock.shutdown().await
}

fn toolset(server: &Server, base: &str, timeout: Duration) -> OpenApiToolset {
    OpenApiToolset::from_str(
        PETSTORE_30,
        OpenApiOptions {
            base_url: Some(server.url(base)),
            headers: vec![
                ("Authorization".into(), format!("Bearer {KEY}")),
                ("X-Client".into(), "ironloop-tests".into()),
            ],
            timeout: Some(timeout),
            max_output_bytes: 2000,
            ..Default::default()
        },
    )
    .unwrap()
}

fn executor(ts: &OpenApiToolset) -> Executor {
    let registry = Arc::new(ToolRegistry::new());
    for t in ts.tools() {
        registry.register(t).unwrap();
    }
    Executor::new(registry)
}

async fn call(exec: &Executor, name: &str, args: Value) -> Result<String, ToolError> {
    let calls = [ToolCall::new("c1", name, args)];
    let mut r = exec.execute(&calls, &RunContext::default()).await;
    r.pop().unwrap().outcome.map(|o| o.content.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_reach_the_server_as_the_spec_says() {
    let server = Server::start().await;
    let ts = toolset(&server, "/v1/", Duration::from_secs(10));
    let exec = executor(&ts);

    let out = call(
        &exec,
        "listPets",
        json!({"limit": 5, "tags": ["a", "b c"], "filter_status": "sold"}),
    )
    .await
    .unwrap();
    assert!(
        out.starts_with("HTTP 200 OK\n{\"method\": \"GET\""),
        "{out}"
    );
    let seen = server.last();
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.path, "/v1/pets");
    assert_eq!(
        seen.query,
        "limit=5&tags=a&tags=b%20c&filter%5Bstatus%5D=sold"
    );
    assert_eq!(seen.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(seen.headers["x-client"], "ironloop-tests");
    assert!(seen.headers["accept"].contains("application/json"));
    // The echo carries the key: the result the model reads does not.
    assert!(
        !out.contains(KEY) && out.contains(r#""authorization": "[redacted]""#),
        "{out}"
    );

    call(
        &exec,
        "createPet",
        json!({"X-Request-Id": "req-1", "body": {"name": "Rex", "tag": null}}),
    )
    .await
    .unwrap();
    let seen = server.last();
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/v1/pets")
    );
    assert_eq!(seen.headers["content-type"], "application/json");
    assert_eq!(seen.headers["x-request-id"], "req-1");
    assert_eq!(
        serde_json::from_str::<Value>(&seen.body).unwrap(),
        json!({"name": "Rex", "tag": null})
    );

    call(&exec, "showPetById", json!({"petId": "a b/c?é"}))
        .await
        .unwrap();
    assert_eq!(server.last().path, "/v1/pets/a%20b%2Fc%3F%C3%A9");

    call(
        &exec,
        "delete_pets_petId",
        json!({"petId": "7", "X-Request-Id": "req-2", "hard": true}),
    )
    .await
    .unwrap();
    let seen = server.last();
    assert_eq!(
        (
            seen.method.as_str(),
            seen.path.as_str(),
            seen.query.as_str()
        ),
        ("DELETE", "/v1/pets/7", "hard=true")
    );
    assert_eq!(seen.headers["x-request-id"], "req-2");

    call(
        &exec,
        "updatePet",
        json!({"petId": "7", "body": {"name": "Max"}}),
    )
    .await
    .unwrap();
    let seen = server.last();
    assert_eq!(seen.method, "PATCH");
    assert_eq!(seen.headers["content-type"], "application/merge-patch+json");

    // The artifact keeps the parsed body for the program.
    let calls = [ToolCall::new("c1", "getCategory", json!({"categoryId": 3}))];
    let r = exec.execute(&calls, &RunContext::default()).await;
    let art = r[0].outcome.as_ref().unwrap().artifact.clone().unwrap();
    assert_eq!(art["status"], 200);
    assert_eq!(art["body"]["path"], "/v1/categories/3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_before_any_request() {
    let server = Server::start().await;
    let ts = toolset(&server, "/v1", Duration::from_secs(10));
    let exec = executor(&ts);
    let e = call(&exec, "createPet", json!({"body": {"name": "Rex"}}))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::InvalidArgs { .. }), "{e}");
    let e = call(&exec, "listPets", json!({"limitt": 5}))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::InvalidArgs { .. }), "{e}");
    let e = call(&exec, "getCategory", json!({"categoryId": 0}))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::InvalidArgs { .. }), "{e}");
    assert!(server.seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_2xx_status_is_an_error_with_status_and_body() {
    let server = Server::start().await;
    let ts = toolset(&server, "/v1", Duration::from_secs(10));
    let exec = executor(&ts);
    let e = call(&exec, "showPetById", json!({"petId": "999"}))
        .await
        .unwrap_err();
    let ToolError::Failed { tool, message, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(tool, "showPetById");
    assert!(message.starts_with("HTTP 404 Not Found\n"), "{message}");
    assert!(message.contains("pet 999 not found"), "{message}");
    assert!(
        !message.contains(KEY) && message.contains("[redacted]"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_times_out_and_a_call_can_be_cancelled() {
    let server = Server::start().await;
    let ts = toolset(&server, "/slow", Duration::from_millis(300));
    assert_eq!(ts.tools()[0].timeout(), Some(Duration::from_millis(300)));
    let exec = executor(&ts);
    let t0 = Instant::now();
    let e = call(&exec, "listPets", json!({})).await.unwrap_err();
    assert!(matches!(e, ToolError::Timeout { .. }), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());

    // Called directly (no executor): the tool's own limit and ctx.cancel apply.
    let tool = ts.tools()[0].clone();
    let t0 = Instant::now();
    let e = tool
        .call(json!({}), ToolContext::new("c", "listPets"))
        .await
        .unwrap_err();
    assert!(matches!(e, ToolError::Timeout { .. }), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3));

    let ts = toolset(&server, "/slow", Duration::from_secs(30));
    let tool = ts.tools()[0].clone();
    let ctx = ToolContext::new("c", "listPets");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        cancel.cancel();
    });
    let t0 = Instant::now();
    let e = tool.call(json!({}), ctx).await.unwrap_err();
    assert!(matches!(e, ToolError::Cancelled { .. }), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_bodies_are_cut_with_a_note() {
    let server = Server::start().await;
    let ts = toolset(&server, "/big", Duration::from_secs(10));
    let out = call(&executor(&ts), "listPets", json!({})).await.unwrap();
    assert!(out.starts_with("HTTP 200 OK\nxxxx"), "{out}");
    assert!(out.ends_with("\n[truncated: 8000 bytes omitted]"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_url_resolves_relative_servers_against_the_spec_url() {
    let server = Server::start().await;
    let ts = OpenApiToolset::from_url(&server.url("/openapi.json"), OpenApiOptions::default())
        .await
        .unwrap();
    assert_eq!(ts.base_url(), Some(server.url("/v1").as_str()));
    let out = call(&executor(&ts), "showPetById", json!({"petId": 7}))
        .await
        .unwrap();
    assert!(out.starts_with("HTTP 200 OK"), "{out}");
    assert_eq!(server.last().path, "/v1/pets/7");

    call(
        &executor(&ts),
        "pets_search",
        json!({"where": {"tag": "dog"}}),
    )
    .await
    .unwrap();
    assert_eq!(
        server.last().query,
        "where=%7B%22tag%22%3A%22dog%22%7D",
        "a `content` parameter is sent as JSON text"
    );

    let err = OpenApiToolset::from_url(&server.url("/pets/999"), OpenApiOptions::default())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, OpenApiError::Fetch { .. }));
    assert!(msg.contains("404"), "{msg}");
}
