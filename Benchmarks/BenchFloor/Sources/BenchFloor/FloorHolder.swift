public final class FloorHolder {}
