from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrimitiveType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIMITIVE_TYPE_INVALID: _ClassVar[PrimitiveType]
    PRED: _ClassVar[PrimitiveType]
    S1: _ClassVar[PrimitiveType]
    S2: _ClassVar[PrimitiveType]
    S4: _ClassVar[PrimitiveType]
    S8: _ClassVar[PrimitiveType]
    S16: _ClassVar[PrimitiveType]
    S32: _ClassVar[PrimitiveType]
    S64: _ClassVar[PrimitiveType]
    U1: _ClassVar[PrimitiveType]
    U2: _ClassVar[PrimitiveType]
    U4: _ClassVar[PrimitiveType]
    U8: _ClassVar[PrimitiveType]
    U16: _ClassVar[PrimitiveType]
    U32: _ClassVar[PrimitiveType]
    U64: _ClassVar[PrimitiveType]
    F16: _ClassVar[PrimitiveType]
    F32: _ClassVar[PrimitiveType]
    BF16: _ClassVar[PrimitiveType]
    F64: _ClassVar[PrimitiveType]
    F8E5M2: _ClassVar[PrimitiveType]
    F8E4M3: _ClassVar[PrimitiveType]
    F8E4M3FN: _ClassVar[PrimitiveType]
    F8E4M3B11FNUZ: _ClassVar[PrimitiveType]
    F8E3M4: _ClassVar[PrimitiveType]
    F8E5M2FNUZ: _ClassVar[PrimitiveType]
    F8E4M3FNUZ: _ClassVar[PrimitiveType]
    F4E2M1FN: _ClassVar[PrimitiveType]
    F8E8M0FNU: _ClassVar[PrimitiveType]
    C64: _ClassVar[PrimitiveType]
    C128: _ClassVar[PrimitiveType]
    TUPLE: _ClassVar[PrimitiveType]
    OPAQUE_TYPE: _ClassVar[PrimitiveType]
    TOKEN: _ClassVar[PrimitiveType]
    BUFFER: _ClassVar[PrimitiveType]

class FftType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FFT: _ClassVar[FftType]
    IFFT: _ClassVar[FftType]
    RFFT: _ClassVar[FftType]
    IRFFT: _ClassVar[FftType]

class RandomDistribution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RNG_INVALID: _ClassVar[RandomDistribution]
    RNG_UNIFORM: _ClassVar[RandomDistribution]
    RNG_NORMAL: _ClassVar[RandomDistribution]

class RandomAlgorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RNG_DEFAULT: _ClassVar[RandomAlgorithm]
    RNG_THREE_FRY: _ClassVar[RandomAlgorithm]
    RNG_PHILOX: _ClassVar[RandomAlgorithm]

class CustomCallSchedule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_NONE: _ClassVar[CustomCallSchedule]
    SCHEDULE_LATEST: _ClassVar[CustomCallSchedule]
    SCHEDULE_EARLIEST: _ClassVar[CustomCallSchedule]

class CustomCallApiVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    API_VERSION_UNSPECIFIED: _ClassVar[CustomCallApiVersion]
    API_VERSION_ORIGINAL: _ClassVar[CustomCallApiVersion]
    API_VERSION_STATUS_RETURNING: _ClassVar[CustomCallApiVersion]
    API_VERSION_STATUS_RETURNING_UNIFIED: _ClassVar[CustomCallApiVersion]
    API_VERSION_TYPED_FFI: _ClassVar[CustomCallApiVersion]

class PaddingType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PADDING_INVALID: _ClassVar[PaddingType]
    PADDING_VALID: _ClassVar[PaddingType]
    PADDING_SAME: _ClassVar[PaddingType]

class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNDEFINED_ALIAS: _ClassVar[Kind]
    MAY_ALIAS: _ClassVar[Kind]
    MUST_ALIAS: _ClassVar[Kind]
PRIMITIVE_TYPE_INVALID: PrimitiveType
PRED: PrimitiveType
S1: PrimitiveType
S2: PrimitiveType
S4: PrimitiveType
S8: PrimitiveType
S16: PrimitiveType
S32: PrimitiveType
S64: PrimitiveType
U1: PrimitiveType
U2: PrimitiveType
U4: PrimitiveType
U8: PrimitiveType
U16: PrimitiveType
U32: PrimitiveType
U64: PrimitiveType
F16: PrimitiveType
F32: PrimitiveType
BF16: PrimitiveType
F64: PrimitiveType
F8E5M2: PrimitiveType
F8E4M3: PrimitiveType
F8E4M3FN: PrimitiveType
F8E4M3B11FNUZ: PrimitiveType
F8E3M4: PrimitiveType
F8E5M2FNUZ: PrimitiveType
F8E4M3FNUZ: PrimitiveType
F4E2M1FN: PrimitiveType
F8E8M0FNU: PrimitiveType
C64: PrimitiveType
C128: PrimitiveType
TUPLE: PrimitiveType
OPAQUE_TYPE: PrimitiveType
TOKEN: PrimitiveType
BUFFER: PrimitiveType
FFT: FftType
IFFT: FftType
RFFT: FftType
IRFFT: FftType
RNG_INVALID: RandomDistribution
RNG_UNIFORM: RandomDistribution
RNG_NORMAL: RandomDistribution
RNG_DEFAULT: RandomAlgorithm
RNG_THREE_FRY: RandomAlgorithm
RNG_PHILOX: RandomAlgorithm
SCHEDULE_NONE: CustomCallSchedule
SCHEDULE_LATEST: CustomCallSchedule
SCHEDULE_EARLIEST: CustomCallSchedule
API_VERSION_UNSPECIFIED: CustomCallApiVersion
API_VERSION_ORIGINAL: CustomCallApiVersion
API_VERSION_STATUS_RETURNING: CustomCallApiVersion
API_VERSION_STATUS_RETURNING_UNIFIED: CustomCallApiVersion
API_VERSION_TYPED_FFI: CustomCallApiVersion
PADDING_INVALID: PaddingType
PADDING_VALID: PaddingType
PADDING_SAME: PaddingType
UNDEFINED_ALIAS: Kind
MAY_ALIAS: Kind
MUST_ALIAS: Kind

class TileProto(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class LayoutProto(_message.Message):
    __slots__ = ("minor_to_major", "tiles", "element_size_in_bits", "memory_space", "tail_padding_alignment_in_elements", "dynamic_shape_metadata_prefix_bytes")
    MINOR_TO_MAJOR_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_SIZE_IN_BITS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
    TAIL_PADDING_ALIGNMENT_IN_ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SHAPE_METADATA_PREFIX_BYTES_FIELD_NUMBER: _ClassVar[int]
    minor_to_major: _containers.RepeatedScalarFieldContainer[int]
    tiles: _containers.RepeatedCompositeFieldContainer[TileProto]
    element_size_in_bits: int
    memory_space: int
    tail_padding_alignment_in_elements: int
    dynamic_shape_metadata_prefix_bytes: int
    def __init__(self, minor_to_major: _Optional[_Iterable[int]] = ..., tiles: _Optional[_Iterable[_Union[TileProto, _Mapping]]] = ..., element_size_in_bits: _Optional[int] = ..., memory_space: _Optional[int] = ..., tail_padding_alignment_in_elements: _Optional[int] = ..., dynamic_shape_metadata_prefix_bytes: _Optional[int] = ...) -> None: ...

class ShapeProto(_message.Message):
    __slots__ = ("element_type", "dimensions", "tuple_shapes", "layout", "is_dynamic_dimension")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    IS_DYNAMIC_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    element_type: PrimitiveType
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    tuple_shapes: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    layout: LayoutProto
    is_dynamic_dimension: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, element_type: _Optional[_Union[PrimitiveType, str]] = ..., dimensions: _Optional[_Iterable[int]] = ..., tuple_shapes: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., layout: _Optional[_Union[LayoutProto, _Mapping]] = ..., is_dynamic_dimension: _Optional[_Iterable[bool]] = ...) -> None: ...

class ProgramShapeProto(_message.Message):
    __slots__ = ("parameters", "result", "parameter_names")
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NAMES_FIELD_NUMBER: _ClassVar[int]
    parameters: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    result: ShapeProto
    parameter_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, parameters: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., result: _Optional[_Union[ShapeProto, _Mapping]] = ..., parameter_names: _Optional[_Iterable[str]] = ...) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = ("op_type", "op_name", "source_file", "source_line", "size_of_generated_code_in_bytes", "size_of_memory_working_set_in_bytes", "deduplicated_name", "stack_frame_id", "scheduling_name", "source_end_line", "source_column", "source_end_column")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    SIZE_OF_GENERATED_CODE_IN_BYTES_FIELD_NUMBER: _ClassVar[int]
    SIZE_OF_MEMORY_WORKING_SET_IN_BYTES_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_NAME_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_END_LINE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_COLUMN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_END_COLUMN_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    op_name: str
    source_file: str
    source_line: int
    size_of_generated_code_in_bytes: int
    size_of_memory_working_set_in_bytes: int
    deduplicated_name: str
    stack_frame_id: int
    scheduling_name: str
    source_end_line: int
    source_column: int
    source_end_column: int
    def __init__(self, op_type: _Optional[str] = ..., op_name: _Optional[str] = ..., source_file: _Optional[str] = ..., source_line: _Optional[int] = ..., size_of_generated_code_in_bytes: _Optional[int] = ..., size_of_memory_working_set_in_bytes: _Optional[int] = ..., deduplicated_name: _Optional[str] = ..., stack_frame_id: _Optional[int] = ..., scheduling_name: _Optional[str] = ..., source_end_line: _Optional[int] = ..., source_column: _Optional[int] = ..., source_end_column: _Optional[int] = ...) -> None: ...

class LiteralProto(_message.Message):
    __slots__ = ("shape", "preds", "u8s", "s32s", "s64s", "u32s", "u64s", "f32s", "f64s", "tuple_literals", "f16s", "c64s", "bf16s", "s8s", "u16s", "s16s", "c128s", "f8e5m2s", "f8e4m3fns", "s4s", "u4s", "f8e4m3b11fnuzs", "f8e5m2fnuzs", "f8e4m3fnuzs", "s2s", "u2s", "f8e4m3s", "f8e3m4s", "s1s", "u1s", "f4e2m1fns", "f8e8m0fnus")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    PREDS_FIELD_NUMBER: _ClassVar[int]
    U8S_FIELD_NUMBER: _ClassVar[int]
    S32S_FIELD_NUMBER: _ClassVar[int]
    S64S_FIELD_NUMBER: _ClassVar[int]
    U32S_FIELD_NUMBER: _ClassVar[int]
    U64S_FIELD_NUMBER: _ClassVar[int]
    F32S_FIELD_NUMBER: _ClassVar[int]
    F64S_FIELD_NUMBER: _ClassVar[int]
    TUPLE_LITERALS_FIELD_NUMBER: _ClassVar[int]
    F16S_FIELD_NUMBER: _ClassVar[int]
    C64S_FIELD_NUMBER: _ClassVar[int]
    BF16S_FIELD_NUMBER: _ClassVar[int]
    S8S_FIELD_NUMBER: _ClassVar[int]
    U16S_FIELD_NUMBER: _ClassVar[int]
    S16S_FIELD_NUMBER: _ClassVar[int]
    C128S_FIELD_NUMBER: _ClassVar[int]
    F8E5M2S_FIELD_NUMBER: _ClassVar[int]
    F8E4M3FNS_FIELD_NUMBER: _ClassVar[int]
    S4S_FIELD_NUMBER: _ClassVar[int]
    U4S_FIELD_NUMBER: _ClassVar[int]
    F8E4M3B11FNUZS_FIELD_NUMBER: _ClassVar[int]
    F8E5M2FNUZS_FIELD_NUMBER: _ClassVar[int]
    F8E4M3FNUZS_FIELD_NUMBER: _ClassVar[int]
    S2S_FIELD_NUMBER: _ClassVar[int]
    U2S_FIELD_NUMBER: _ClassVar[int]
    F8E4M3S_FIELD_NUMBER: _ClassVar[int]
    F8E3M4S_FIELD_NUMBER: _ClassVar[int]
    S1S_FIELD_NUMBER: _ClassVar[int]
    U1S_FIELD_NUMBER: _ClassVar[int]
    F4E2M1FNS_FIELD_NUMBER: _ClassVar[int]
    F8E8M0FNUS_FIELD_NUMBER: _ClassVar[int]
    shape: ShapeProto
    preds: _containers.RepeatedScalarFieldContainer[bool]
    u8s: bytes
    s32s: _containers.RepeatedScalarFieldContainer[int]
    s64s: _containers.RepeatedScalarFieldContainer[int]
    u32s: _containers.RepeatedScalarFieldContainer[int]
    u64s: _containers.RepeatedScalarFieldContainer[int]
    f32s: _containers.RepeatedScalarFieldContainer[float]
    f64s: _containers.RepeatedScalarFieldContainer[float]
    tuple_literals: _containers.RepeatedCompositeFieldContainer[LiteralProto]
    f16s: bytes
    c64s: _containers.RepeatedScalarFieldContainer[float]
    bf16s: bytes
    s8s: bytes
    u16s: bytes
    s16s: bytes
    c128s: _containers.RepeatedScalarFieldContainer[float]
    f8e5m2s: bytes
    f8e4m3fns: bytes
    s4s: bytes
    u4s: bytes
    f8e4m3b11fnuzs: bytes
    f8e5m2fnuzs: bytes
    f8e4m3fnuzs: bytes
    s2s: bytes
    u2s: bytes
    f8e4m3s: bytes
    f8e3m4s: bytes
    s1s: bytes
    u1s: bytes
    f4e2m1fns: bytes
    f8e8m0fnus: bytes
    def __init__(self, shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., preds: _Optional[_Iterable[bool]] = ..., u8s: _Optional[bytes] = ..., s32s: _Optional[_Iterable[int]] = ..., s64s: _Optional[_Iterable[int]] = ..., u32s: _Optional[_Iterable[int]] = ..., u64s: _Optional[_Iterable[int]] = ..., f32s: _Optional[_Iterable[float]] = ..., f64s: _Optional[_Iterable[float]] = ..., tuple_literals: _Optional[_Iterable[_Union[LiteralProto, _Mapping]]] = ..., f16s: _Optional[bytes] = ..., c64s: _Optional[_Iterable[float]] = ..., bf16s: _Optional[bytes] = ..., s8s: _Optional[bytes] = ..., u16s: _Optional[bytes] = ..., s16s: _Optional[bytes] = ..., c128s: _Optional[_Iterable[float]] = ..., f8e5m2s: _Optional[bytes] = ..., f8e4m3fns: _Optional[bytes] = ..., s4s: _Optional[bytes] = ..., u4s: _Optional[bytes] = ..., f8e4m3b11fnuzs: _Optional[bytes] = ..., f8e5m2fnuzs: _Optional[bytes] = ..., f8e4m3fnuzs: _Optional[bytes] = ..., s2s: _Optional[bytes] = ..., u2s: _Optional[bytes] = ..., f8e4m3s: _Optional[bytes] = ..., f8e3m4s: _Optional[bytes] = ..., s1s: _Optional[bytes] = ..., u1s: _Optional[bytes] = ..., f4e2m1fns: _Optional[bytes] = ..., f8e8m0fnus: _Optional[bytes] = ...) -> None: ...

class WindowDimension(_message.Message):
    __slots__ = ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation", "window_reversal")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STRIDE_FIELD_NUMBER: _ClassVar[int]
    PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
    PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
    WINDOW_DILATION_FIELD_NUMBER: _ClassVar[int]
    BASE_DILATION_FIELD_NUMBER: _ClassVar[int]
    WINDOW_REVERSAL_FIELD_NUMBER: _ClassVar[int]
    size: int
    stride: int
    padding_low: int
    padding_high: int
    window_dilation: int
    base_dilation: int
    window_reversal: bool
    def __init__(self, size: _Optional[int] = ..., stride: _Optional[int] = ..., padding_low: _Optional[int] = ..., padding_high: _Optional[int] = ..., window_dilation: _Optional[int] = ..., base_dilation: _Optional[int] = ..., window_reversal: _Optional[bool] = ...) -> None: ...

class Window(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[WindowDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[WindowDimension, _Mapping]]] = ...) -> None: ...

class PaddingConfig(_message.Message):
    __slots__ = ("dimensions",)
    class PaddingConfigDimension(_message.Message):
        __slots__ = ("edge_padding_low", "edge_padding_high", "interior_padding")
        EDGE_PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
        EDGE_PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
        INTERIOR_PADDING_FIELD_NUMBER: _ClassVar[int]
        edge_padding_low: int
        edge_padding_high: int
        interior_padding: int
        def __init__(self, edge_padding_low: _Optional[int] = ..., edge_padding_high: _Optional[int] = ..., interior_padding: _Optional[int] = ...) -> None: ...
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[PaddingConfig.PaddingConfigDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[PaddingConfig.PaddingConfigDimension, _Mapping]]] = ...) -> None: ...

class GatherDimensionNumbers(_message.Message):
    __slots__ = ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "operand_batching_dims", "start_indices_batching_dims")
    OFFSET_DIMS_FIELD_NUMBER: _ClassVar[int]
    COLLAPSED_SLICE_DIMS_FIELD_NUMBER: _ClassVar[int]
    START_INDEX_MAP_FIELD_NUMBER: _ClassVar[int]
    INDEX_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    OPERAND_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    START_INDICES_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    offset_dims: _containers.RepeatedScalarFieldContainer[int]
    collapsed_slice_dims: _containers.RepeatedScalarFieldContainer[int]
    start_index_map: _containers.RepeatedScalarFieldContainer[int]
    index_vector_dim: int
    operand_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    start_indices_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, offset_dims: _Optional[_Iterable[int]] = ..., collapsed_slice_dims: _Optional[_Iterable[int]] = ..., start_index_map: _Optional[_Iterable[int]] = ..., index_vector_dim: _Optional[int] = ..., operand_batching_dims: _Optional[_Iterable[int]] = ..., start_indices_batching_dims: _Optional[_Iterable[int]] = ...) -> None: ...

class ScatterDimensionNumbers(_message.Message):
    __slots__ = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim", "input_batching_dims", "scatter_indices_batching_dims")
    UPDATE_WINDOW_DIMS_FIELD_NUMBER: _ClassVar[int]
    INSERTED_WINDOW_DIMS_FIELD_NUMBER: _ClassVar[int]
    SCATTER_DIMS_TO_OPERAND_DIMS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    INPUT_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    SCATTER_INDICES_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    update_window_dims: _containers.RepeatedScalarFieldContainer[int]
    inserted_window_dims: _containers.RepeatedScalarFieldContainer[int]
    scatter_dims_to_operand_dims: _containers.RepeatedScalarFieldContainer[int]
    index_vector_dim: int
    input_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    scatter_indices_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, update_window_dims: _Optional[_Iterable[int]] = ..., inserted_window_dims: _Optional[_Iterable[int]] = ..., scatter_dims_to_operand_dims: _Optional[_Iterable[int]] = ..., index_vector_dim: _Optional[int] = ..., input_batching_dims: _Optional[_Iterable[int]] = ..., scatter_indices_batching_dims: _Optional[_Iterable[int]] = ...) -> None: ...

class ConvolutionDimensionNumbers(_message.Message):
    __slots__ = ("kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "input_batch_dimension", "input_feature_dimension", "output_batch_dimension", "output_feature_dimension", "input_spatial_dimensions", "output_spatial_dimensions")
    KERNEL_INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    INPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    input_batch_dimension: int
    input_feature_dimension: int
    output_batch_dimension: int
    output_feature_dimension: int
    input_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    output_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, kernel_input_feature_dimension: _Optional[int] = ..., kernel_output_feature_dimension: _Optional[int] = ..., kernel_spatial_dimensions: _Optional[_Iterable[int]] = ..., input_batch_dimension: _Optional[int] = ..., input_feature_dimension: _Optional[int] = ..., output_batch_dimension: _Optional[int] = ..., output_feature_dimension: _Optional[int] = ..., input_spatial_dimensions: _Optional[_Iterable[int]] = ..., output_spatial_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class DotDimensionNumbers(_message.Message):
    __slots__ = ("lhs_contracting_dimensions", "rhs_contracting_dimensions", "lhs_batch_dimensions", "rhs_batch_dimensions")
    LHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    LHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    lhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    lhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, lhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., rhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., lhs_batch_dimensions: _Optional[_Iterable[int]] = ..., rhs_batch_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class RaggedDotDimensionNumbers(_message.Message):
    __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")
    DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    LHS_RAGGED_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_GROUP_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_group_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dot_dimension_numbers: _Optional[_Union[DotDimensionNumbers, _Mapping]] = ..., lhs_ragged_dimensions: _Optional[_Iterable[int]] = ..., rhs_group_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class TriangularSolveOptions(_message.Message):
    __slots__ = ("left_side", "lower", "unit_diagonal", "transpose_a")
    class Transpose(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TRANSPOSE_INVALID: _ClassVar[TriangularSolveOptions.Transpose]
        NO_TRANSPOSE: _ClassVar[TriangularSolveOptions.Transpose]
        TRANSPOSE: _ClassVar[TriangularSolveOptions.Transpose]
        ADJOINT: _ClassVar[TriangularSolveOptions.Transpose]
    TRANSPOSE_INVALID: TriangularSolveOptions.Transpose
    NO_TRANSPOSE: TriangularSolveOptions.Transpose
    TRANSPOSE: TriangularSolveOptions.Transpose
    ADJOINT: TriangularSolveOptions.Transpose
    LEFT_SIDE_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    UNIT_DIAGONAL_FIELD_NUMBER: _ClassVar[int]
    TRANSPOSE_A_FIELD_NUMBER: _ClassVar[int]
    left_side: bool
    lower: bool
    unit_diagonal: bool
    transpose_a: TriangularSolveOptions.Transpose
    def __init__(self, left_side: _Optional[bool] = ..., lower: _Optional[bool] = ..., unit_diagonal: _Optional[bool] = ..., transpose_a: _Optional[_Union[TriangularSolveOptions.Transpose, str]] = ...) -> None: ...

class CholeskyOptions(_message.Message):
    __slots__ = ("lower",)
    LOWER_FIELD_NUMBER: _ClassVar[int]
    lower: bool
    def __init__(self, lower: _Optional[bool] = ...) -> None: ...

class FrontendAttributes(_message.Message):
    __slots__ = ("map",)
    class MapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MAP_FIELD_NUMBER: _ClassVar[int]
    map: _containers.ScalarMap[str, str]
    def __init__(self, map: _Optional[_Mapping[str, str]] = ...) -> None: ...

class OpSharding(_message.Message):
    __slots__ = ("type", "tile_shape", "tile_assignment_dimensions", "tile_assignment_devices", "tuple_shardings", "replicate_on_last_tile_dim", "metadata", "last_tile_dims", "iota_reshape_dims", "iota_transpose_perm")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        REPLICATED: _ClassVar[OpSharding.Type]
        MAXIMAL: _ClassVar[OpSharding.Type]
        TUPLE: _ClassVar[OpSharding.Type]
        OTHER: _ClassVar[OpSharding.Type]
        MANUAL: _ClassVar[OpSharding.Type]
        UNKNOWN: _ClassVar[OpSharding.Type]
        UNREDUCED: _ClassVar[OpSharding.Type]
    REPLICATED: OpSharding.Type
    MAXIMAL: OpSharding.Type
    TUPLE: OpSharding.Type
    OTHER: OpSharding.Type
    MANUAL: OpSharding.Type
    UNKNOWN: OpSharding.Type
    UNREDUCED: OpSharding.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TILE_SHAPE_FIELD_NUMBER: _ClassVar[int]
    TILE_ASSIGNMENT_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TILE_ASSIGNMENT_DEVICES_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHARDINGS_FIELD_NUMBER: _ClassVar[int]
    REPLICATE_ON_LAST_TILE_DIM_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    LAST_TILE_DIMS_FIELD_NUMBER: _ClassVar[int]
    IOTA_RESHAPE_DIMS_FIELD_NUMBER: _ClassVar[int]
    IOTA_TRANSPOSE_PERM_FIELD_NUMBER: _ClassVar[int]
    type: OpSharding.Type
    tile_shape: ShapeProto
    tile_assignment_dimensions: _containers.RepeatedScalarFieldContainer[int]
    tile_assignment_devices: _containers.RepeatedScalarFieldContainer[int]
    tuple_shardings: _containers.RepeatedCompositeFieldContainer[OpSharding]
    replicate_on_last_tile_dim: bool
    metadata: _containers.RepeatedCompositeFieldContainer[OpMetadata]
    last_tile_dims: _containers.RepeatedScalarFieldContainer[OpSharding.Type]
    iota_reshape_dims: _containers.RepeatedScalarFieldContainer[int]
    iota_transpose_perm: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, type: _Optional[_Union[OpSharding.Type, str]] = ..., tile_shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., tile_assignment_dimensions: _Optional[_Iterable[int]] = ..., tile_assignment_devices: _Optional[_Iterable[int]] = ..., tuple_shardings: _Optional[_Iterable[_Union[OpSharding, _Mapping]]] = ..., replicate_on_last_tile_dim: _Optional[bool] = ..., metadata: _Optional[_Iterable[_Union[OpMetadata, _Mapping]]] = ..., last_tile_dims: _Optional[_Iterable[_Union[OpSharding.Type, str]]] = ..., iota_reshape_dims: _Optional[_Iterable[int]] = ..., iota_transpose_perm: _Optional[_Iterable[int]] = ...) -> None: ...

class ReplicaGroup(_message.Message):
    __slots__ = ("replica_ids",)
    REPLICA_IDS_FIELD_NUMBER: _ClassVar[int]
    replica_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, replica_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class IotaReplicaGroupListProto(_message.Message):
    __slots__ = ("num_replica_groups", "num_devices_per_group", "iota_reshape_dims", "iota_transpose_perm")
    NUM_REPLICA_GROUPS_FIELD_NUMBER: _ClassVar[int]
    NUM_DEVICES_PER_GROUP_FIELD_NUMBER: _ClassVar[int]
    IOTA_RESHAPE_DIMS_FIELD_NUMBER: _ClassVar[int]
    IOTA_TRANSPOSE_PERM_FIELD_NUMBER: _ClassVar[int]
    num_replica_groups: int
    num_devices_per_group: int
    iota_reshape_dims: _containers.RepeatedScalarFieldContainer[int]
    iota_transpose_perm: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, num_replica_groups: _Optional[int] = ..., num_devices_per_group: _Optional[int] = ..., iota_reshape_dims: _Optional[_Iterable[int]] = ..., iota_transpose_perm: _Optional[_Iterable[int]] = ...) -> None: ...

class CollectiveDeviceListProto(_message.Message):
    __slots__ = ("replica_groups", "iota_replica_group_list")
    REPLICA_GROUPS_FIELD_NUMBER: _ClassVar[int]
    IOTA_REPLICA_GROUP_LIST_FIELD_NUMBER: _ClassVar[int]
    replica_groups: _containers.RepeatedCompositeFieldContainer[ReplicaGroup]
    iota_replica_group_list: IotaReplicaGroupListProto
    def __init__(self, replica_groups: _Optional[_Iterable[_Union[ReplicaGroup, _Mapping]]] = ..., iota_replica_group_list: _Optional[_Union[IotaReplicaGroupListProto, _Mapping]] = ...) -> None: ...

class SourceTarget(_message.Message):
    __slots__ = ("source", "target")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    source: int
    target: int
    def __init__(self, source: _Optional[int] = ..., target: _Optional[int] = ...) -> None: ...

class PrecisionConfig(_message.Message):
    __slots__ = ("operand_precision", "algorithm")
    class Precision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEFAULT: _ClassVar[PrecisionConfig.Precision]
        HIGH: _ClassVar[PrecisionConfig.Precision]
        HIGHEST: _ClassVar[PrecisionConfig.Precision]
    DEFAULT: PrecisionConfig.Precision
    HIGH: PrecisionConfig.Precision
    HIGHEST: PrecisionConfig.Precision
    class Algorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ALG_UNSET: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_ANY_F8_ANY_F8_F32: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_F16_F16_F16: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_F16_F16_F32: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_BF16_BF16_BF16: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_BF16_BF16_F32: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_BF16_BF16_F32_X3: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_BF16_BF16_F32_X6: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_TF32_TF32_F32: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_TF32_TF32_F32_X3: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_F32_F32_F32: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_F64_F64_F64: _ClassVar[PrecisionConfig.Algorithm]
        ALG_DOT_BF16_BF16_F32_X9: _ClassVar[PrecisionConfig.Algorithm]
    ALG_UNSET: PrecisionConfig.Algorithm
    ALG_DOT_ANY_F8_ANY_F8_F32: PrecisionConfig.Algorithm
    ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM: PrecisionConfig.Algorithm
    ALG_DOT_F16_F16_F16: PrecisionConfig.Algorithm
    ALG_DOT_F16_F16_F32: PrecisionConfig.Algorithm
    ALG_DOT_BF16_BF16_BF16: PrecisionConfig.Algorithm
    ALG_DOT_BF16_BF16_F32: PrecisionConfig.Algorithm
    ALG_DOT_BF16_BF16_F32_X3: PrecisionConfig.Algorithm
    ALG_DOT_BF16_BF16_F32_X6: PrecisionConfig.Algorithm
    ALG_DOT_TF32_TF32_F32: PrecisionConfig.Algorithm
    ALG_DOT_TF32_TF32_F32_X3: PrecisionConfig.Algorithm
    ALG_DOT_F32_F32_F32: PrecisionConfig.Algorithm
    ALG_DOT_F64_F64_F64: PrecisionConfig.Algorithm
    ALG_DOT_BF16_BF16_F32_X9: PrecisionConfig.Algorithm
    OPERAND_PRECISION_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    operand_precision: _containers.RepeatedScalarFieldContainer[PrecisionConfig.Precision]
    algorithm: PrecisionConfig.Algorithm
    def __init__(self, operand_precision: _Optional[_Iterable[_Union[PrecisionConfig.Precision, str]]] = ..., algorithm: _Optional[_Union[PrecisionConfig.Algorithm, str]] = ...) -> None: ...

class ParameterReplication(_message.Message):
    __slots__ = ("replicated_at_leaf_buffers",)
    REPLICATED_AT_LEAF_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    replicated_at_leaf_buffers: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, replicated_at_leaf_buffers: _Optional[_Iterable[bool]] = ...) -> None: ...

class OutputOperandAliasing(_message.Message):
    __slots__ = ("output_shape_index", "operand_index", "operand_shape_index")
    OUTPUT_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
    OPERAND_INDEX_FIELD_NUMBER: _ClassVar[int]
    OPERAND_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
    output_shape_index: _containers.RepeatedScalarFieldContainer[int]
    operand_index: int
    operand_shape_index: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, output_shape_index: _Optional[_Iterable[int]] = ..., operand_index: _Optional[int] = ..., operand_shape_index: _Optional[_Iterable[int]] = ...) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = ("name", "opcode", "shape", "metadata", "literal", "parameter_number", "fusion_kind", "tuple_index", "dimensions", "window", "convolution_dimension_numbers", "slice_dimensions", "exponent_bits", "mantissa_bits", "dynamic_slice_sizes", "padding_config", "outfeed_config", "distribution", "epsilon", "feature_index", "channel_id", "infeed_config", "custom_call_target", "outfeed_shape", "dot_dimension_numbers", "fft_type", "fft_length", "gather_dimension_numbers", "gather_slice_sizes", "id", "operand_ids", "control_predecessor_ids", "called_computation_ids", "sharding", "backend_config", "is_host_transfer", "scatter_dimension_numbers", "replica_groups", "feature_group_count", "precision_config", "source_target_pairs", "constrain_layout", "operand_shapes_with_layout", "batch_group_count", "triangular_solve_options", "is_stable", "parameter_replication", "cholesky_options", "comparison_direction", "custom_call_has_side_effect", "delta", "indices_are_sorted", "frontend_attributes", "unique_indices", "rng_algorithm", "use_global_device_ids", "comparison_type", "output_operand_aliasing", "padding_type", "custom_call_schedule", "custom_call_api_version", "async_execution_thread", "cross_program_prefetch_index", "k", "largest", "collective_device_list", "is_composite", "ragged_dot_dimension_numbers")
    class SliceDimensions(_message.Message):
        __slots__ = ("start", "limit", "stride")
        START_FIELD_NUMBER: _ClassVar[int]
        LIMIT_FIELD_NUMBER: _ClassVar[int]
        STRIDE_FIELD_NUMBER: _ClassVar[int]
        start: int
        limit: int
        stride: int
        def __init__(self, start: _Optional[int] = ..., limit: _Optional[int] = ..., stride: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    LITERAL_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    FUSION_KIND_FIELD_NUMBER: _ClassVar[int]
    TUPLE_INDEX_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    CONVOLUTION_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    SLICE_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    EXPONENT_BITS_FIELD_NUMBER: _ClassVar[int]
    MANTISSA_BITS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SLICE_SIZES_FIELD_NUMBER: _ClassVar[int]
    PADDING_CONFIG_FIELD_NUMBER: _ClassVar[int]
    OUTFEED_CONFIG_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    FEATURE_INDEX_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    INFEED_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_TARGET_FIELD_NUMBER: _ClassVar[int]
    OUTFEED_SHAPE_FIELD_NUMBER: _ClassVar[int]
    DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    FFT_TYPE_FIELD_NUMBER: _ClassVar[int]
    FFT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    GATHER_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    GATHER_SLICE_SIZES_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERAND_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTROL_PREDECESSOR_IDS_FIELD_NUMBER: _ClassVar[int]
    CALLED_COMPUTATION_IDS_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    BACKEND_CONFIG_FIELD_NUMBER: _ClassVar[int]
    IS_HOST_TRANSFER_FIELD_NUMBER: _ClassVar[int]
    SCATTER_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_GROUPS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    PRECISION_CONFIG_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TARGET_PAIRS_FIELD_NUMBER: _ClassVar[int]
    CONSTRAIN_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    OPERAND_SHAPES_WITH_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    BATCH_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRIANGULAR_SOLVE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    IS_STABLE_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_REPLICATION_FIELD_NUMBER: _ClassVar[int]
    CHOLESKY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_DIRECTION_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_HAS_SIDE_EFFECT_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    INDICES_ARE_SORTED_FIELD_NUMBER: _ClassVar[int]
    FRONTEND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_INDICES_FIELD_NUMBER: _ClassVar[int]
    RNG_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    USE_GLOBAL_DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_TYPE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_OPERAND_ALIASING_FIELD_NUMBER: _ClassVar[int]
    PADDING_TYPE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_API_VERSION_FIELD_NUMBER: _ClassVar[int]
    ASYNC_EXECUTION_THREAD_FIELD_NUMBER: _ClassVar[int]
    CROSS_PROGRAM_PREFETCH_INDEX_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    LARGEST_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_DEVICE_LIST_FIELD_NUMBER: _ClassVar[int]
    IS_COMPOSITE_FIELD_NUMBER: _ClassVar[int]
    RAGGED_DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    opcode: str
    shape: ShapeProto
    metadata: OpMetadata
    literal: LiteralProto
    parameter_number: int
    fusion_kind: str
    tuple_index: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    window: Window
    convolution_dimension_numbers: ConvolutionDimensionNumbers
    slice_dimensions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto.SliceDimensions]
    exponent_bits: int
    mantissa_bits: int
    dynamic_slice_sizes: _containers.RepeatedScalarFieldContainer[int]
    padding_config: PaddingConfig
    outfeed_config: bytes
    distribution: RandomDistribution
    epsilon: float
    feature_index: int
    channel_id: int
    infeed_config: bytes
    custom_call_target: str
    outfeed_shape: ShapeProto
    dot_dimension_numbers: DotDimensionNumbers
    fft_type: FftType
    fft_length: _containers.RepeatedScalarFieldContainer[int]
    gather_dimension_numbers: GatherDimensionNumbers
    gather_slice_sizes: _containers.RepeatedScalarFieldContainer[int]
    id: int
    operand_ids: _containers.RepeatedScalarFieldContainer[int]
    control_predecessor_ids: _containers.RepeatedScalarFieldContainer[int]
    called_computation_ids: _containers.RepeatedScalarFieldContainer[int]
    sharding: OpSharding
    backend_config: bytes
    is_host_transfer: bool
    scatter_dimension_numbers: ScatterDimensionNumbers
    replica_groups: _containers.RepeatedCompositeFieldContainer[ReplicaGroup]
    feature_group_count: int
    precision_config: PrecisionConfig
    source_target_pairs: _containers.RepeatedCompositeFieldContainer[SourceTarget]
    constrain_layout: bool
    operand_shapes_with_layout: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    batch_group_count: int
    triangular_solve_options: TriangularSolveOptions
    is_stable: bool
    parameter_replication: ParameterReplication
    cholesky_options: CholeskyOptions
    comparison_direction: str
    custom_call_has_side_effect: bool
    delta: int
    indices_are_sorted: bool
    frontend_attributes: FrontendAttributes
    unique_indices: bool
    rng_algorithm: RandomAlgorithm
    use_global_device_ids: bool
    comparison_type: str
    output_operand_aliasing: _containers.RepeatedCompositeFieldContainer[OutputOperandAliasing]
    padding_type: PaddingType
    custom_call_schedule: CustomCallSchedule
    custom_call_api_version: CustomCallApiVersion
    async_execution_thread: str
    cross_program_prefetch_index: int
    k: int
    largest: bool
    collective_device_list: CollectiveDeviceListProto
    is_composite: bool
    ragged_dot_dimension_numbers: RaggedDotDimensionNumbers
    def __init__(self, name: _Optional[str] = ..., opcode: _Optional[str] = ..., shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., metadata: _Optional[_Union[OpMetadata, _Mapping]] = ..., literal: _Optional[_Union[LiteralProto, _Mapping]] = ..., parameter_number: _Optional[int] = ..., fusion_kind: _Optional[str] = ..., tuple_index: _Optional[int] = ..., dimensions: _Optional[_Iterable[int]] = ..., window: _Optional[_Union[Window, _Mapping]] = ..., convolution_dimension_numbers: _Optional[_Union[ConvolutionDimensionNumbers, _Mapping]] = ..., slice_dimensions: _Optional[_Iterable[_Union[HloInstructionProto.SliceDimensions, _Mapping]]] = ..., exponent_bits: _Optional[int] = ..., mantissa_bits: _Optional[int] = ..., dynamic_slice_sizes: _Optional[_Iterable[int]] = ..., padding_config: _Optional[_Union[PaddingConfig, _Mapping]] = ..., outfeed_config: _Optional[bytes] = ..., distribution: _Optional[_Union[RandomDistribution, str]] = ..., epsilon: _Optional[float] = ..., feature_index: _Optional[int] = ..., channel_id: _Optional[int] = ..., infeed_config: _Optional[bytes] = ..., custom_call_target: _Optional[str] = ..., outfeed_shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., dot_dimension_numbers: _Optional[_Union[DotDimensionNumbers, _Mapping]] = ..., fft_type: _Optional[_Union[FftType, str]] = ..., fft_length: _Optional[_Iterable[int]] = ..., gather_dimension_numbers: _Optional[_Union[GatherDimensionNumbers, _Mapping]] = ..., gather_slice_sizes: _Optional[_Iterable[int]] = ..., id: _Optional[int] = ..., operand_ids: _Optional[_Iterable[int]] = ..., control_predecessor_ids: _Optional[_Iterable[int]] = ..., called_computation_ids: _Optional[_Iterable[int]] = ..., sharding: _Optional[_Union[OpSharding, _Mapping]] = ..., backend_config: _Optional[bytes] = ..., is_host_transfer: _Optional[bool] = ..., scatter_dimension_numbers: _Optional[_Union[ScatterDimensionNumbers, _Mapping]] = ..., replica_groups: _Optional[_Iterable[_Union[ReplicaGroup, _Mapping]]] = ..., feature_group_count: _Optional[int] = ..., precision_config: _Optional[_Union[PrecisionConfig, _Mapping]] = ..., source_target_pairs: _Optional[_Iterable[_Union[SourceTarget, _Mapping]]] = ..., constrain_layout: _Optional[bool] = ..., operand_shapes_with_layout: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., batch_group_count: _Optional[int] = ..., triangular_solve_options: _Optional[_Union[TriangularSolveOptions, _Mapping]] = ..., is_stable: _Optional[bool] = ..., parameter_replication: _Optional[_Union[ParameterReplication, _Mapping]] = ..., cholesky_options: _Optional[_Union[CholeskyOptions, _Mapping]] = ..., comparison_direction: _Optional[str] = ..., custom_call_has_side_effect: _Optional[bool] = ..., delta: _Optional[int] = ..., indices_are_sorted: _Optional[bool] = ..., frontend_attributes: _Optional[_Union[FrontendAttributes, _Mapping]] = ..., unique_indices: _Optional[bool] = ..., rng_algorithm: _Optional[_Union[RandomAlgorithm, str]] = ..., use_global_device_ids: _Optional[bool] = ..., comparison_type: _Optional[str] = ..., output_operand_aliasing: _Optional[_Iterable[_Union[OutputOperandAliasing, _Mapping]]] = ..., padding_type: _Optional[_Union[PaddingType, str]] = ..., custom_call_schedule: _Optional[_Union[CustomCallSchedule, str]] = ..., custom_call_api_version: _Optional[_Union[CustomCallApiVersion, str]] = ..., async_execution_thread: _Optional[str] = ..., cross_program_prefetch_index: _Optional[int] = ..., k: _Optional[int] = ..., largest: _Optional[bool] = ..., collective_device_list: _Optional[_Union[CollectiveDeviceListProto, _Mapping]] = ..., is_composite: _Optional[bool] = ..., ragged_dot_dimension_numbers: _Optional[_Union[RaggedDotDimensionNumbers, _Mapping]] = ...) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "program_shape", "id", "root_id", "is_fusion_computation", "execution_thread")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    IS_FUSION_COMPUTATION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_THREAD_FIELD_NUMBER: _ClassVar[int]
    name: str
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    program_shape: ProgramShapeProto
    id: int
    root_id: int
    is_fusion_computation: bool
    execution_thread: str
    def __init__(self, name: _Optional[str] = ..., instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ..., program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ..., root_id: _Optional[int] = ..., is_fusion_computation: _Optional[bool] = ..., execution_thread: _Optional[str] = ...) -> None: ...

class HloScheduleProto(_message.Message):
    __slots__ = ("sequences",)
    class InstructionSequence(_message.Message):
        __slots__ = ("instruction_ids",)
        INSTRUCTION_IDS_FIELD_NUMBER: _ClassVar[int]
        instruction_ids: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, instruction_ids: _Optional[_Iterable[int]] = ...) -> None: ...
    class SequencesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: HloScheduleProto.InstructionSequence
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[HloScheduleProto.InstructionSequence, _Mapping]] = ...) -> None: ...
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    sequences: _containers.MessageMap[int, HloScheduleProto.InstructionSequence]
    def __init__(self, sequences: _Optional[_Mapping[int, HloScheduleProto.InstructionSequence]] = ...) -> None: ...

class HloInputOutputAliasProto(_message.Message):
    __slots__ = ("entries",)
    class AliasEntryProto(_message.Message):
        __slots__ = ("output_shape_index", "parameter_number", "parameter_shape_index", "kind")
        OUTPUT_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
        PARAMETER_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        KIND_FIELD_NUMBER: _ClassVar[int]
        output_shape_index: _containers.RepeatedScalarFieldContainer[int]
        parameter_number: int
        parameter_shape_index: _containers.RepeatedScalarFieldContainer[int]
        kind: Kind
        def __init__(self, output_shape_index: _Optional[_Iterable[int]] = ..., parameter_number: _Optional[int] = ..., parameter_shape_index: _Optional[_Iterable[int]] = ..., kind: _Optional[_Union[Kind, str]] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[HloInputOutputAliasProto.AliasEntryProto]
    def __init__(self, entries: _Optional[_Iterable[_Union[HloInputOutputAliasProto.AliasEntryProto, _Mapping]]] = ...) -> None: ...

class HloBufferDonorProto(_message.Message):
    __slots__ = ("entries",)
    class BufferDonorEntryProto(_message.Message):
        __slots__ = ("parameter_number", "parameter_shape_index")
        PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
        PARAMETER_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        parameter_number: int
        parameter_shape_index: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, parameter_number: _Optional[int] = ..., parameter_shape_index: _Optional[_Iterable[int]] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[HloBufferDonorProto.BufferDonorEntryProto]
    def __init__(self, entries: _Optional[_Iterable[_Union[HloBufferDonorProto.BufferDonorEntryProto, _Mapping]]] = ...) -> None: ...

class StackFrameIndexProto(_message.Message):
    __slots__ = ("file_names", "function_names", "file_locations", "stack_frames")
    class FileLocation(_message.Message):
        __slots__ = ("file_name_id", "function_name_id", "line", "column", "end_line", "end_column")
        FILE_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        FUNCTION_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        LINE_FIELD_NUMBER: _ClassVar[int]
        COLUMN_FIELD_NUMBER: _ClassVar[int]
        END_LINE_FIELD_NUMBER: _ClassVar[int]
        END_COLUMN_FIELD_NUMBER: _ClassVar[int]
        file_name_id: int
        function_name_id: int
        line: int
        column: int
        end_line: int
        end_column: int
        def __init__(self, file_name_id: _Optional[int] = ..., function_name_id: _Optional[int] = ..., line: _Optional[int] = ..., column: _Optional[int] = ..., end_line: _Optional[int] = ..., end_column: _Optional[int] = ...) -> None: ...
    class StackFrame(_message.Message):
        __slots__ = ("file_location_id", "parent_frame_id")
        FILE_LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
        PARENT_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
        file_location_id: int
        parent_frame_id: int
        def __init__(self, file_location_id: _Optional[int] = ..., parent_frame_id: _Optional[int] = ...) -> None: ...
    FILE_NAMES_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAMES_FIELD_NUMBER: _ClassVar[int]
    FILE_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    file_names: _containers.RepeatedScalarFieldContainer[str]
    function_names: _containers.RepeatedScalarFieldContainer[str]
    file_locations: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.FileLocation]
    stack_frames: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.StackFrame]
    def __init__(self, file_names: _Optional[_Iterable[str]] = ..., function_names: _Optional[_Iterable[str]] = ..., file_locations: _Optional[_Iterable[_Union[StackFrameIndexProto.FileLocation, _Mapping]]] = ..., stack_frames: _Optional[_Iterable[_Union[StackFrameIndexProto.StackFrame, _Mapping]]] = ...) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "computations", "host_program_shape", "id", "entry_computation_id", "schedule", "input_output_alias", "is_dynamic", "spmd_output_sharding", "spmd_parameters_shardings", "stack_frame_index", "buffer_donor", "frontend_attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    HOST_PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    INPUT_OUTPUT_ALIAS_FIELD_NUMBER: _ClassVar[int]
    IS_DYNAMIC_FIELD_NUMBER: _ClassVar[int]
    SPMD_OUTPUT_SHARDING_FIELD_NUMBER: _ClassVar[int]
    SPMD_PARAMETERS_SHARDINGS_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    BUFFER_DONOR_FIELD_NUMBER: _ClassVar[int]
    FRONTEND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    entry_computation_name: str
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    host_program_shape: ProgramShapeProto
    id: int
    entry_computation_id: int
    schedule: HloScheduleProto
    input_output_alias: HloInputOutputAliasProto
    is_dynamic: bool
    spmd_output_sharding: OpSharding
    spmd_parameters_shardings: _containers.RepeatedCompositeFieldContainer[OpSharding]
    stack_frame_index: StackFrameIndexProto
    buffer_donor: HloBufferDonorProto
    frontend_attributes: FrontendAttributes
    def __init__(self, name: _Optional[str] = ..., entry_computation_name: _Optional[str] = ..., computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ..., host_program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ..., entry_computation_id: _Optional[int] = ..., schedule: _Optional[_Union[HloScheduleProto, _Mapping]] = ..., input_output_alias: _Optional[_Union[HloInputOutputAliasProto, _Mapping]] = ..., is_dynamic: _Optional[bool] = ..., spmd_output_sharding: _Optional[_Union[OpSharding, _Mapping]] = ..., spmd_parameters_shardings: _Optional[_Iterable[_Union[OpSharding, _Mapping]]] = ..., stack_frame_index: _Optional[_Union[StackFrameIndexProto, _Mapping]] = ..., buffer_donor: _Optional[_Union[HloBufferDonorProto, _Mapping]] = ..., frontend_attributes: _Optional[_Union[FrontendAttributes, _Mapping]] = ...) -> None: ...

class HloProto(_message.Message):
    __slots__ = ("hlo_module",)
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ...) -> None: ...
