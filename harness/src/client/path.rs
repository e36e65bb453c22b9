//! A method's path taken from the generated client itself, so that a
//! misspelt method is a compile error and not a fault that never fires.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tonic::body::Body;

use crate::error::{Error, Kind};

/// The `:path` (`/package.Service/Method`) that a call of a tonic
/// generated client sends, read from the generated code: `call` is given
/// a [`PathProbe`] to build the client on and makes one call through it,
/// which the probe records and refuses. What [`HandlerFault::method`],
/// [`Trace::attempts`] and the other path arguments take.
///
/// ```
/// # mod grpc_chaos_scenarios { pub mod services { include!(concat!(env!("CARGO_MANIFEST_DIR"), "/reference/services.rs")); } }
/// use grpc_chaos::client::method_path;
/// use grpc_chaos_scenarios::services::pb::{store_client::StoreClient, SaveRequest};
///
/// let save = method_path(|c| async move {
///     StoreClient::new(c).save(SaveRequest::default()).await
/// })?;
/// assert_eq!(save, "/tt.v1.Store/Save");
/// # Ok::<(), grpc_chaos::Error>(())
/// ```
///
/// A streaming method takes a stream (`ScoreboardClient::new(c)
/// .upload(futures_util::stream::empty())`). Nothing is sent anywhere and no
/// simulation runs: the call's future is polled once, outside any
/// runtime, and dropped. The request message is never encoded (tonic
/// encodes it as the body is read, and the probe reads none).
///
/// # Errors
/// [`Error::is_misconfigured`](crate::Error::is_misconfigured) if `call`'s
/// future does not send a request through the probe on its first poll
/// (it awaits something else first, or calls nothing): the message names
/// what to change.
///
/// [`HandlerFault::method`]: crate::fault::HandlerFault::method
/// [`Trace::attempts`]: crate::Trace::attempts
pub fn method_path<F, Fut>(call: F) -> Result<String, Error>
where
    F: FnOnce(PathProbe) -> Fut,
    Fut: Future,
{
    let seen = Arc::new(Mutex::new(None));
    let probe = PathProbe { seen: seen.clone() };
    let mut cx = Context::from_waker(Waker::noop());
    // Ready or pending, the request went out on the first poll or never.
    let _ = pin!(call(probe)).poll(&mut cx);
    let path = seen.lock().map(|mut p| p.take()).unwrap_or_default();
    path.ok_or_else(|| {
        Error::new(Kind::Misconfigured(
            "method_path: the closure made no call through the probe on its first poll; \
             build the generated client on the probe it is given and return the call's future \
             (`|c| async move { FooClient::new(c).bar(Req::default()).await }`), awaiting \
             nothing before it"
                .to_owned(),
        ))
    })
}

/// The transport [`method_path`] hands its closure: a
/// `tonic::client::GrpcService` that records the path of the first request
/// and answers every request with `Status::unavailable` at once. Only
/// [`method_path`] makes one.
#[derive(Clone, Debug)]
pub struct PathProbe {
    seen: Arc<Mutex<Option<String>>>,
}

impl tower::Service<http::Request<Body>> for PathProbe {
    type Response = http::Response<Body>;
    type Error = tonic::Status;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if let Ok(mut seen) = self.seen.lock() {
            seen.get_or_insert_with(|| req.uri().path().to_owned());
        }
        std::future::ready(Err(tonic::Status::unavailable(
            "grpc_chaos::client::PathProbe sends nothing: it only reads a method's path",
        )))
    }
}
