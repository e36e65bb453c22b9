//! One name for "a channel tonic's generated clients accept", so a service
//! that calls others can be generic over its channel: [`Channel`] in the
//! simulation, `tonic::transport::Channel` (or a tower stack over it) in
//! production.

use tonic::body::Body;
use tonic::client::GrpcService;
use tonic::codegen::{Bytes, StdError};

/// A transport a tonic generated client (`FooClient<T>`) accepts, that can
/// be cloned into each call and held by a server's service: the bounds the
/// generated `impl<T> FooClient<T>` puts on `T`, plus `Clone + Send + Sync
/// + 'static` and a `Send` response future, so a handler that awaits a call
/// through it is itself `Send` (tonic's server requires that).
///
/// Implemented for every type that meets those bounds: [`Channel`],
/// [`crate::retry::Retry`] over it, `tonic::transport::Channel`. Name it in
/// a `where` clause in place of the five bounds it stands for; they come
/// with it (`C::ResponseBody`, `C::Future: Send` and the rest need not be
/// repeated). `Sync` is there because tonic's generated server traits
/// require it of the service that holds the channel: a tower stack boxed
/// as `tower::util::BoxCloneService` is not `Sync`; box it as
/// `BoxCloneSyncService`.
///
/// ```
/// use grpc_chaos::GrpcChannel;
///
/// /// A service of the user's own that calls another through `C`.
/// #[derive(Clone)]
/// struct Orders<C> {
///     inventory: C,
/// }
///
/// impl<C: GrpcChannel> Orders<C> {
///     /// What a generated client does with its transport.
///     async fn reserve(&self) -> Result<(), tonic::Status> {
///         let mut grpc = tonic::client::Grpc::new(self.inventory.clone());
///         grpc.ready().await.map_err(|e| tonic::Status::unknown(e.into().to_string()))?;
///         Ok(())
///     }
/// }
///
/// fn is_send<F: Send>(_: F) {}
/// fn both(sim: Orders<grpc_chaos::Channel>, prod: Orders<tonic::transport::Channel>) {
///     is_send(async move { sim.reserve().await });
///     is_send(async move { prod.reserve().await });
/// }
///
/// fn is_channel<C: GrpcChannel>() {}
/// is_channel::<grpc_chaos::Channel>();
/// is_channel::<grpc_chaos::retry::Retry<grpc_chaos::Channel>>();
/// is_channel::<tonic::transport::Channel>();
/// ```
///
/// [`Channel`]: crate::Channel
pub trait GrpcChannel:
    GrpcService<
        Body,
        Error: Into<StdError>,
        ResponseBody: http_body::Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<T> GrpcChannel for T where
    T: GrpcService<
            Body,
            Error: Into<StdError>,
            ResponseBody: http_body::Body<Data = Bytes, Error: Into<StdError> + Send>
                              + Send
                              + 'static,
            Future: Send,
        > + Clone
        + Send
        + Sync
        + 'static
{
}
